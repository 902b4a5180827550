//! A PostgreSQL table with a pgvector column, over PostgreSQL's own
//! protocol (the `postgres` crate, no TLS): the user names the table, the
//! vector column, the text column (the declaration's text key) and the scope
//! column (its scope key). Discovery reads the column's dimensions, the
//! metric its vector index fixes (none without one) and the columns that
//! hold values on a sample of rows.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};

use super::{CollectionScore, Discovery, Failure, Metric, Point, Scope};

/// Rows sampled to learn which columns hold values.
const SAMPLED_ROWS: i64 = 50;

/// One table's vector column on one server.
pub struct Table<'a> {
    pub url: &'a str,
    pub table: &'a str,
    pub vector_column: &'a str,
}

/// `url` with any password replaced, for a person to read.
pub fn without_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// An identifier quoted for SQL: `schema.table` is two identifiers.
fn quoted(name: &str) -> String {
    name.split('.')
        .map(|part| format!("\"{}\"", part.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(".")
}

/// The time left before `deadline`, or the failure when none is.
fn left(deadline: Instant) -> Result<Duration, Failure> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err("the server did not answer in time".into());
    }
    Ok(left)
}

fn failed(e: postgres::Error) -> Failure {
    if let Some(db) = e.as_db_error() {
        if db.code() == &postgres::error::SqlState::QUERY_CANCELED {
            return "the server did not answer in time".into();
        }
        return format!("the server answered: {}", db.message());
    }
    if e.is_closed() {
        return format!("the connection closed ({e})");
    }
    let text = e.to_string();
    if text.contains("timed out") {
        "the server did not answer in time".into()
    } else {
        format!("the server could not be reached ({e})")
    }
}

/// The operator that orders by `metric`, and the expression of the own
/// score it yields: pgvector's `<#>` is the negative inner product, read
/// here as the inner product itself (higher is closer; `Kind::direction`).
fn operator(metric: Metric) -> (&'static str, &'static str) {
    match metric {
        Metric::Cosine => ("<=>", ""),
        Metric::L2 => ("<->", ""),
        Metric::InnerProduct => ("<#>", "-"),
    }
}

/// The metric a pgvector operator class measures.
fn metric_of(opclass: &str) -> Option<Metric> {
    match opclass {
        "vector_cosine_ops" => Some(Metric::Cosine),
        "vector_l2_ops" => Some(Metric::L2),
        "vector_ip_ops" => Some(Metric::InnerProduct),
        _ => None,
    }
}

/// What the catalog says of the table's vector column.
struct Column {
    /// From the column's type (`vector(384)`); none when it has no fixed size.
    dimensions: Option<u32>,
    /// The metric of its vector index, if it has one.
    metric: Option<Metric>,
    /// Its single-column primary key, the points' ids (else the row's ctid).
    key: Option<String>,
}

impl Table<'_> {
    fn connect(&self, deadline: Instant) -> Result<Client, Failure> {
        let budget = left(deadline)?;
        let mut config: postgres::Config = self.url.parse().map_err(|e| {
            format!(
                "{} is not a PostgreSQL URL ({e})",
                without_password(self.url)
            )
        })?;
        config
            .connect_timeout(budget)
            .application_name("carrel")
            // The server cancels a statement past the budget itself.
            .options(&format!(
                "-c statement_timeout={}",
                budget.as_millis().max(1)
            ));
        config.connect(NoTls).map_err(failed)
    }

    /// The vector column as the catalog describes it, one round trip.
    fn column(&self, db: &mut Client) -> Result<Column, Failure> {
        let row = db
            .query_opt(
                "SELECT t.typname, a.atttypmod,
                   (SELECT string_agg(DISTINCT opc.opcname, ',')
                      FROM pg_index i
                      JOIN pg_opclass opc ON opc.oid = i.indclass[0]
                     WHERE i.indrelid = a.attrelid AND i.indkey[0] = a.attnum),
                   (SELECT k.attname::text
                      FROM pg_index i
                      JOIN pg_attribute k ON k.attrelid = i.indrelid AND k.attnum = i.indkey[0]
                     WHERE i.indrelid = a.attrelid AND i.indisprimary AND i.indnatts = 1)
                 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
                 WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND NOT a.attisdropped",
                &[&self.table, &self.vector_column],
            )
            .map_err(failed)?;
        let Some(row) = row else {
            return Err(format!(
                "the server has no table {} with a column {}",
                self.table, self.vector_column
            ));
        };
        let type_name: String = row.get(0);
        if type_name != "vector" {
            return Err(format!(
                "column {} is of type {type_name}, not pgvector's vector",
                self.vector_column
            ));
        }
        let modifier: i32 = row.get(1);
        let opclasses: Option<String> = row.get(2);
        let metrics: BTreeSet<&str> = opclasses
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .filter(|o| metric_of(o).is_some())
            .collect();
        if metrics.len() > 1 {
            return Err(format!(
                "column {} has vector indexes for several metrics ({}); keep one",
                self.vector_column,
                metrics.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        Ok(Column {
            dimensions: (modifier > 0).then_some(modifier as u32),
            metric: metrics.into_iter().next().and_then(metric_of),
            key: row.get(3),
        })
    }
}

impl super::Collection for Table<'_> {
    fn test(&self, budget: Duration) -> Result<(), Failure> {
        let deadline = Instant::now() + budget;
        let mut db = self.connect(deadline)?;
        self.column(&mut db).map(|_| ())
    }

    fn discover(&self, budget: Duration) -> Result<Discovery, Failure> {
        let deadline = Instant::now() + budget;
        let mut db = self.connect(deadline)?;
        let column = self.column(&mut db)?;
        let table = quoted(self.table);
        let vector = quoted(self.vector_column);
        // Each sampled row as JSON without its vector: the columns that hold
        // a value on some row are the keys a text or a scope can name.
        let rows = db
            .query(
                &format!(
                    "SELECT (to_jsonb(s) - $1::text)::text FROM (SELECT * FROM {table} LIMIT {SAMPLED_ROWS}) s"
                ),
                &[&self.vector_column],
            )
            .map_err(failed)?;
        let mut keys = BTreeSet::new();
        for row in &rows {
            let json: String = row.get(0);
            if let Ok(serde_json::Value::Object(fields)) = serde_json::from_str(&json) {
                keys.extend(
                    fields
                        .into_iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, _)| k),
                );
            }
        }
        let dimensions = match column.dimensions {
            Some(d) => Some(d),
            None => db
                .query_opt(
                    &format!(
                        "SELECT vector_dims({vector}) FROM {table} WHERE {vector} IS NOT NULL LIMIT 1"
                    ),
                    &[],
                )
                .map_err(failed)?
                .map(|r| r.get::<_, i32>(0) as u32),
        };
        Ok(Discovery {
            metric: column.metric,
            dimensions,
            keys: keys.into_iter().collect(),
            points: rows.len() as u32,
            read_at: crate::store::now(),
        })
    }

    fn query(
        &self,
        vector: &[f32],
        n: usize,
        scope: Option<&Scope>,
        text_key: &str,
        metric: Metric,
        budget: Duration,
    ) -> Result<Vec<Point>, Failure> {
        let deadline = Instant::now() + budget;
        let mut db = self.connect(deadline)?;
        let column = self.column(&mut db)?;
        super::still_measures(metric, column.metric)?;
        let (op, sign) = operator(metric);
        let id = column.key.as_deref().map_or("ctid".to_string(), quoted);
        let (table, vec, text) = (
            quoted(self.table),
            quoted(self.vector_column),
            quoted(text_key),
        );
        let literal = format!(
            "[{}]",
            vector
                .iter()
                .map(f32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        );
        let filter = scope.map_or(String::new(), |s| {
            format!("AND {}::text = $2", quoted(&s.key))
        });
        let sql = format!(
            "SELECT {id}::text, {text}::text, ({sign}({vec} {op} $1::text::vector))::float8
               FROM {table} WHERE {vec} IS NOT NULL {filter}
              ORDER BY {vec} {op} $1::text::vector LIMIT {n}"
        );
        let rows = match scope {
            Some(s) => db.query(&sql, &[&literal, &s.value]),
            None => db.query(&sql, &[&literal]),
        }
        .map_err(failed)?;
        Ok(rows
            .iter()
            .map(|row| Point {
                id: row.get(0),
                text: row.get(1),
                own: CollectionScore::new(row.get::<_, f64>(2) as f32),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_and_passwords_hidden() {
        assert_eq!(quoted("notes"), "\"notes\"");
        assert_eq!(quoted("crm.notes"), "\"crm\".\"notes\"");
        assert_eq!(quoted("a\"b"), "\"a\"\"b\"");
        assert_eq!(
            without_password("postgresql://ana:secret@db:5432/crm"),
            "postgresql://ana:***@db:5432/crm"
        );
        assert_eq!(
            without_password("postgresql://ana@db/crm"),
            "postgresql://ana@db/crm"
        );
    }
}
