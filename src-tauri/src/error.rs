//! The one error type commands return. It reaches the UI as
//! `{kind, message}`: `kind` lets the UI choose what to offer (pick another
//! id, install the models), `message` is the engine's sentence, shown as is.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// An id or file that is not there.
    NotFound,
    /// Input the engine refused: a bad pattern, an unresolved mention.
    BadInput,
    /// The ONNX Runtime or a model is missing or broken: see Settings.
    Models,
    /// The library database failed.
    Storage,
    /// Anything else; the message says what.
    Internal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type, thiserror::Error)]
#[error("{message}")]
pub struct AppError {
    pub kind: ErrorKind,
    pub message: String,
}

impl AppError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        AppError {
            kind,
            message: message.into(),
        }
    }
}

impl From<carrel::Error> for AppError {
    fn from(e: carrel::Error) -> Self {
        use carrel::Error as E;
        let kind = match &e {
            E::UnknownDocument(_)
            | E::UnknownWatch(_)
            | E::MissingSource(_)
            | E::UnknownSource(_) => ErrorKind::NotFound,
            E::NotAFolder(_) | E::BadPattern(..) | E::Mention(_) | E::SourceRefused { .. } => {
                ErrorKind::BadInput
            }
            E::ModelMissing { .. }
            | E::ModelChecksum { .. }
            | E::Runtime { .. }
            | E::Embedding(_) => ErrorKind::Models,
            E::Database { .. }
            | E::Sql(_)
            | E::SchemaTooNew { .. }
            | E::VectorExtension(_)
            | E::Corrupt(_) => ErrorKind::Storage,
            _ => ErrorKind::Internal,
        };
        AppError::new(kind, e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, AppError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The UI reads exactly these two fields; a rename here breaks it.
    #[test]
    fn errors_reach_the_ui_as_kind_and_message() {
        let e = AppError::from(carrel::Error::UnknownDocument(42));
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["kind"], "not_found");
        assert!(
            json["message"]
                .as_str()
                .unwrap()
                .contains("no document with id 42"),
            "{json}"
        );
        assert_eq!(json.as_object().unwrap().len(), 2);
    }
}
