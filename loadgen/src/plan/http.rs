//! What an endpoint sends besides its path, as the plan writes it: its headers (and where a
//! value kept in a Secret comes from), and the facts of HTTP methods that its checks and the
//! request builder share.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The method an endpoint uses when it names none.
pub const DEFAULT_METHOD: &str = "GET";

/// Header names the load generator writes itself, lower case: Host from the target address,
/// Content-Length from `body`, and keep-alive framing (no chunked bodies, no Connection or
/// Upgrade games) that the connection loop relies on.
pub const OWNED_HEADERS: [&str; 5] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
];

/// One request header of an endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// Field name, e.g. "Authorization" or "Content-Type": an HTTP token (letters, digits and
    /// !#$%&'*+-.^_`|~). Host, Content-Length, Transfer-Encoding, Connection and Upgrade are
    /// written by the load generator and refused here.
    pub name: String,
    /// The value as written, e.g. "application/json"; no line breaks or other control
    /// characters (tabs are fine). Give exactly one of value and valueFrom.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Where the value comes from when it must not be written in the spec, e.g. a bearer
    /// token: `{secretKeyRef: {name: api-token, key: token}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<HeaderValueFrom>,
}

/// The source of a header value that is not written in the spec.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeaderValueFrom {
    /// A key of a Secret in the run's namespace, as in a pod's `env[].valueFrom.secretKeyRef`.
    /// On a cluster the load generator pod gets it as an environment variable (the operator
    /// never reads it); with `benchmatrix run FILE --secrets DIR` it is the file
    /// DIR/NAME/KEY, laid out as a mounted Secret. Line breaks at the end of the value are
    /// dropped (HTTP header values cannot carry them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<SecretKeyRef>,
    /// Plan files only: the load generator's environment variable that holds the value. The
    /// operator and `benchmatrix run` write this in place of `secretKeyRef`; a BenchmarkRun
    /// refuses it, so it is left out of the CRD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub env: Option<String>,
}

/// A key of a Secret.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// Name of the Secret, e.g. "api-token" (a DNS subdomain: lower case letters, digits, '-'
    /// and '.').
    pub name: String,
    /// Key within the Secret, e.g. "token" (letters, digits, '-', '_' and '.').
    pub key: String,
}

impl std::fmt::Display for SecretKeyRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret {:?} key {:?}", self.name, self.key)
    }
}

/// Whether the answer to `method` has no body whatever its headers say (RFC 9110 §9.3.2).
pub fn answer_has_no_body(method: &str) -> bool {
    method == "HEAD"
}

/// Whether a body on `method` is refused: GET and HEAD define no meaning for one, and servers
/// and proxies differ in whether they read, ignore or reject it.
pub fn body_refused(method: &str) -> bool {
    method == "GET" || method == "HEAD"
}

/// Whether `method` anticipates content, so that a request without a body still says
/// `Content-Length: 0`: every method but those whose semantics define none.
pub fn content_anticipated(method: &str) -> bool {
    !matches!(method, "GET" | "HEAD" | "DELETE" | "OPTIONS" | "TRACE")
}
