//! Reconcile errors: what went wrong, whether retrying can help, and a label for metrics.

/// Why a reconcile could not complete.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A call to the Kubernetes API failed.
    #[error("kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),

    /// The object could not be read as a BenchmarkRun (it does not match the types at all).
    #[error("the BenchmarkRun cannot be read: {0}")]
    Malformed(String),

    /// An object could not be turned into JSON for a patch.
    #[error("cannot serialize {what}: {source}")]
    Serialize {
        /// What was being serialized.
        what: &'static str,
        /// The underlying error.
        source: serde_json::Error,
    },

    /// The object lacks a field every stored object has (namespace, name).
    #[error("the object has no {0}")]
    MissingObjectKey(&'static str),

    /// A pod log stream broke off while it was read (the connection, not the log's content).
    #[error("reading a pod log failed: {0}")]
    ReadLog(#[source] std::io::Error),

    /// The API server refused the status write with something other than a conflict (a 500
    /// from a CRD whose schema no longer has a field the operator writes, a 422, RBAC). It is
    /// retried with backoff, never left waiting for a change: the run cannot move until its
    /// status is stored, and nobody would notice a run that waits in silence.
    #[error("the status write was refused: {code} {reason}: {message}")]
    StatusRefused {
        /// The HTTP status code.
        code: u16,
        /// The API's reason (`InternalError`, `Invalid`, `Forbidden`...).
        reason: String,
        /// The API's message, as it said it.
        message: String,
    },
}

impl Error {
    /// True when retrying the same object cannot succeed until it changes: the reconciler then
    /// waits for a change instead of requeueing.
    pub fn is_permanent(&self) -> bool {
        match self {
            Error::Kube(kube::Error::Api(status)) => {
                // Conflicts, throttling and server errors pass; a refused request (bad
                // request, forbidden by RBAC, invalid) will be refused again.
                !(status.code == 409 || status.code == 429 || status.code >= 500)
            }
            Error::Kube(_) | Error::ReadLog(_) | Error::StatusRefused { .. } => false,
            Error::Malformed(_) | Error::Serialize { .. } | Error::MissingObjectKey(_) => true,
        }
    }

    /// True for a 409 Conflict: the object changed since it was read.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Kube(kube::Error::Api(status)) if status.code == 409)
    }

    /// True when the API server could not be reached at all (refused or broken connection, a
    /// timeout, a 502-504 from a proxy in front of it): the retry is kept short, so the first
    /// reconcile after the API server returns is not held back by a wait that grew while it
    /// was gone.
    pub fn lost_connection(&self) -> bool {
        match self {
            Error::Kube(e) => super::outage::unreachable(e),
            Error::ReadLog(_) => true,
            _ => false,
        }
    }

    /// A failed status write as the refusal it is: an answer of the API other than a conflict
    /// (decided again at once), a 404 (the run is gone) or a proxy's 502-504 (an outage,
    /// handled as one) becomes [`Error::StatusRefused`]; anything else is kept as it is.
    pub fn into_status_refusal(self) -> Self {
        match self {
            Error::Kube(kube::Error::Api(s)) if !matches!(s.code, 404 | 409 | 502..=504) => {
                Error::StatusRefused {
                    code: s.code,
                    reason: if s.reason.is_empty() {
                        format!("HTTP{}", s.code)
                    } else {
                        s.reason.clone()
                    },
                    message: s.message.clone(),
                }
            }
            other => other,
        }
    }

    /// A short stable label for the `benchmatrix_reconcile_errors_total` metric.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(kube::Error::Api(s)) if s.code == 409 => "conflict",
            Error::Kube(kube::Error::Api(s)) if s.code == 403 => "forbidden",
            Error::Kube(kube::Error::Api(s)) if s.code == 404 => "not_found",
            Error::Kube(kube::Error::Api(_)) => "api",
            Error::Kube(_) => "transport",
            Error::Malformed(_) => "malformed",
            Error::Serialize { .. } => "serialize",
            Error::MissingObjectKey(_) => "missing_key",
            Error::ReadLog(_) => "read_log",
            Error::StatusRefused { .. } => "status_refused",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16) -> Error {
        Error::Kube(kube::Error::Api(
            kube::core::Status::failure("x", "y")
                .with_code(code)
                .boxed(),
        ))
    }

    #[test]
    fn conflicts_and_server_errors_are_retried_refusals_are_not() {
        assert!(!api(409).is_permanent());
        assert!(!api(503).is_permanent());
        assert!(api(403).is_permanent());
        assert!(api(422).is_permanent());
        assert_eq!(api(409).metric_label(), "conflict");
        assert_eq!(api(403).metric_label(), "forbidden");
    }
}
