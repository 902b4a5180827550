//! A Chroma collection over Chroma's HTTP API (v2): a heartbeat, discovery
//! (the collection's real metric and dimensions, and the payload keys of a
//! sample of its points), and a nearest-vector query.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{CollectionScore, Discovery, Failure, Metric, Point, Scope};

/// Points sampled to learn a collection's payload keys.
const SAMPLED_POINTS: usize = 50;

/// The payload key that names Chroma's own stored document text.
pub const DOCUMENT_KEY: &str = "#document";

/// One collection on one server.
pub struct Collection<'a> {
    pub url: &'a str,
    pub tenant: &'a str,
    pub database: &'a str,
    pub name: &'a str,
}

fn client(budget: Duration) -> Result<reqwest::blocking::Client, Failure> {
    reqwest::blocking::Client::builder()
        .timeout(budget)
        .connect_timeout(budget)
        .build()
        .map_err(|e| format!("no HTTP client: {e}"))
}

/// The time left before `deadline`, or the failure when none is.
fn left(deadline: Instant) -> Result<Duration, Failure> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err("the server did not answer in time".into());
    }
    Ok(left)
}

fn read(response: reqwest::Result<reqwest::blocking::Response>) -> Result<Value, Failure> {
    let response = response.map_err(|e| {
        if e.is_timeout() {
            "the server did not answer in time".to_string()
        } else if e.is_connect() {
            format!("the server could not be reached ({e})")
        } else {
            format!("the request failed ({e})")
        }
    })?;
    let status = response.status();
    let body: Value = response
        .json()
        .map_err(|e| format!("the server answered {status} with no JSON ({e})"))?;
    if !status.is_success() {
        let message = body
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("no message");
        return Err(format!("the server answered {status}: {message}"));
    }
    Ok(body)
}

impl Collection<'_> {
    fn base(&self) -> String {
        format!(
            "{}/api/v2/tenants/{}/databases/{}/collections",
            self.url.trim_end_matches('/'),
            self.tenant,
            self.database
        )
    }

    /// The collection's record: id, metric, dimensions.
    fn describe(
        &self,
        http: &reqwest::blocking::Client,
        deadline: Instant,
    ) -> Result<(String, Metric, Option<u32>), Failure> {
        let found = read(
            http.get(format!("{}/{}", self.base(), self.name))
                .timeout(left(deadline)?)
                .send(),
        )?;
        let id = found
            .get("id")
            .and_then(Value::as_str)
            .ok_or("the collection's record has no id")?
            .to_string();
        // The space is in the configuration; a collection made without one
        // uses Chroma's default, l2.
        let space = found
            .pointer("/configuration_json/hnsw/space")
            .or_else(|| found.pointer("/configuration_json/spann/space"))
            .and_then(Value::as_str)
            .unwrap_or("l2");
        let metric = Metric::parse(space)
            .ok_or_else(|| format!("the collection's space {space} is unknown"))?;
        let dimensions = found
            .get("dimension")
            .and_then(Value::as_u64)
            .map(|d| d as u32);
        Ok((id, metric, dimensions))
    }
}

impl super::Collection for Collection<'_> {
    /// The server answers its heartbeat and knows the collection.
    fn test(&self, budget: Duration) -> Result<(), Failure> {
        let deadline = Instant::now() + budget;
        let http = client(budget)?;
        read(
            http.get(format!(
                "{}/api/v2/heartbeat",
                self.url.trim_end_matches('/')
            ))
            .timeout(left(deadline)?)
            .send(),
        )?;
        self.describe(&http, deadline).map(|_| ())
    }

    /// Reads what the collection really is: its metric, its dimensions and
    /// the payload keys on a sample of its points.
    fn discover(&self, budget: Duration) -> Result<Discovery, Failure> {
        let deadline = Instant::now() + budget;
        let http = client(budget)?;
        let (id, metric, dimensions) = self.describe(&http, deadline)?;
        let sample = read(
            http.post(format!("{}/{id}/get", self.base()))
                .json(&json!({"limit": SAMPLED_POINTS, "include": ["documents", "metadatas"]}))
                .timeout(left(deadline)?)
                .send(),
        )?;
        let mut keys = std::collections::BTreeSet::new();
        let documents = sample.get("documents").and_then(Value::as_array);
        if documents.is_some_and(|d| d.iter().any(|t| t.is_string())) {
            keys.insert(DOCUMENT_KEY.to_string());
        }
        for meta in sample
            .get("metadatas")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(m) = meta.as_object() {
                keys.extend(m.keys().cloned());
            }
        }
        let points = sample
            .get("ids")
            .and_then(Value::as_array)
            .map_or(0, |a| a.len()) as u32;
        Ok(Discovery {
            metric: Some(metric),
            dimensions,
            keys: keys.into_iter().collect(),
            points,
            read_at: crate::store::now(),
        })
    }

    /// The `n` points nearest `vector`, within `scope`, each with its text
    /// under `text_key`, all within `budget`. The collection is described
    /// first (its id), and a metric that is no longer `metric` fails the
    /// query: its distances would be read the wrong way.
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
        let http = client(budget)?;
        let (id, found, _) = self.describe(&http, deadline)?;
        super::still_measures(metric, Some(found))?;
        let mut ask = json!({
            "query_embeddings": [vector],
            "n_results": n,
            "include": ["documents", "metadatas", "distances"],
        });
        if let Some(s) = scope {
            ask["where"] = json!({ s.key.clone(): s.value.clone() });
        }
        let found = read(
            http.post(format!("{}/{id}/query", self.base()))
                .json(&ask)
                .timeout(left(deadline)?)
                .send(),
        )?;
        // Each field asked for comes as one list per query vector; a field
        // missing is a malformed answer, never "no points".
        let first = |key: &str| -> Result<Vec<Value>, Failure> {
            found
                .get(key)
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_array)
                .cloned()
                .ok_or_else(|| format!("the server's answer has no {key} for the query"))
        };
        let (ids, documents, metadatas, distances) = (
            first("ids")?,
            first("documents")?,
            first("metadatas")?,
            first("distances")?,
        );
        let mut points = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            let Some(distance) = distances.get(i).and_then(Value::as_f64) else {
                return Err(format!("point {i} came without a distance"));
            };
            let text = if text_key == DOCUMENT_KEY {
                documents.get(i).and_then(Value::as_str)
            } else {
                metadatas
                    .get(i)
                    .and_then(|m| m.get(text_key))
                    .and_then(Value::as_str)
            };
            points.push(Point {
                id: id.as_str().map_or_else(|| id.to_string(), str::to_string),
                text: text.map(str::to_string),
                own: CollectionScore::new(distance as f32),
            });
        }
        Ok(points)
    }
}
