//! The `http://HOST:PORT[/base]` address of the service under test.
//!
//! Only plain HTTP/1.1 is spoken (load tests run against 127.0.0.1 or an in-cluster Service), so
//! this small parser replaces a URL crate and refuses `https` with a clear message instead of
//! failing later, once the load has started.

use std::fmt;
use std::str::FromStr;

/// A parsed target address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetUrl {
    /// Host name or IP literal, without brackets for IPv6.
    pub host: String,
    /// TCP port (80 when the URL names none).
    pub port: u16,
    /// Path prefix without a trailing slash (`""` for the root); endpoint paths are appended.
    pub base_path: String,
}

impl TargetUrl {
    /// `host:port` as it goes into a socket address lookup.
    pub fn socket_authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The value of the `Host` request header.
    pub fn host_header(&self) -> String {
        self.socket_authority()
    }

    /// The request target for `path` (which starts with `/`) under the base path.
    pub fn join(&self, path: &str) -> String {
        format!("{}{}", self.base_path, path)
    }
}

impl fmt::Display for TargetUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.socket_authority(), self.base_path)
    }
}

/// Why a target URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URL {input:?}: {reason}")]
pub struct ParseUrlError {
    input: String,
    reason: &'static str,
}

impl FromStr for TargetUrl {
    type Err = ParseUrlError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let fail = |reason| ParseUrlError {
            input: input.to_owned(),
            reason,
        };
        let rest = if let Some(rest) = input.strip_prefix("http://") {
            rest
        } else if input.starts_with("https://") {
            return Err(fail("https is not supported; use http://"));
        } else {
            return Err(fail("must start with http://"));
        };
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if path.contains(['?', '#']) {
            return Err(fail("a query or fragment is not allowed in the base URL"));
        }
        if authority.contains('@') {
            return Err(fail("user info is not supported"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let end = v6.find(']').ok_or_else(|| fail("unclosed '[' in host"))?;
            let after = &v6[end + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(fail("unexpected text after IPv6 host")),
            };
            (&v6[..end], port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(fail("missing host"));
        }
        if !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
        {
            return Err(fail("host contains characters that are not allowed"));
        }
        let port = match port {
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(p) if p > 0 => p,
                _ => return Err(fail("port must be a number from 1 to 65535")),
            },
        };
        Ok(Self {
            host: host.to_owned(),
            port,
            base_path: path.trim_end_matches('/').to_owned(),
        })
    }
}

#[cfg(test)]
mod tests;
