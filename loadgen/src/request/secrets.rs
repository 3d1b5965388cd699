//! How a header value kept in a Secret reaches the load generator without being written into
//! its plan: [`to_env`] swaps each `valueFrom.secretKeyRef` for `valueFrom.env`, naming an
//! environment variable that the operator fills from the Secret (a pod env `secretKeyRef`)
//! and `benchmatrix run` from the file of `--secrets DIR`.

use crate::plan::Workload;
use crate::plan::{HeaderValueFrom, SecretKeyRef};

/// One header value the load generator must be given through its environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretEnv {
    /// The environment variable the plan names.
    pub env: String,
    /// Where its value is kept.
    pub secret: SecretKeyRef,
    /// The header's field path in the spec, e.g. `workload.endpoints[0].headers[1]`.
    pub at: String,
}

/// The environment variable for header `header` of endpoint `endpoint`: named by position, so
/// it says nothing about the Secret and two runs of one spec use the same names.
pub fn env_name(endpoint: usize, header: usize) -> String {
    format!("BENCHMATRIX_HEADER_{endpoint}_{header}")
}

/// Every `secretKeyRef` of `workload`, with the environment variable that will carry it.
pub fn secret_envs(workload: &Workload) -> Vec<SecretEnv> {
    let mut out = Vec::new();
    for (i, e) in workload.endpoints.iter().enumerate() {
        for (j, h) in e.headers.iter().enumerate() {
            if let Some(secret) = h.value_from.as_ref().and_then(|f| f.secret_key_ref.clone()) {
                out.push(SecretEnv {
                    env: env_name(i, j),
                    secret,
                    at: format!("workload.endpoints[{i}].headers[{j}]"),
                });
            }
        }
    }
    out
}

/// `workload` as a plan file carries it: each `secretKeyRef` replaced by the `env` of
/// [`secret_envs`], so no plan holds a Secret's name or value, only a variable name.
pub fn to_env(workload: &Workload) -> Workload {
    let mut w = workload.clone();
    for (i, e) in w.endpoints.iter_mut().enumerate() {
        for (j, h) in e.headers.iter_mut().enumerate() {
            if h.value_from
                .as_ref()
                .is_some_and(|f| f.secret_key_ref.is_some())
            {
                h.value_from = Some(HeaderValueFrom {
                    secret_key_ref: None,
                    env: Some(env_name(i, j)),
                });
            }
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Endpoint;
    use crate::plan::Header;

    #[test]
    fn secret_refs_become_positional_env_names_and_literals_stay() {
        let secret = SecretKeyRef {
            name: "api-token".into(),
            key: "token".into(),
        };
        let w = Workload {
            endpoints: vec![
                Endpoint {
                    name: "a".into(),
                    path: "/".into(),
                    ..Default::default()
                },
                Endpoint {
                    name: "b".into(),
                    path: "/".into(),
                    headers: vec![
                        Header {
                            name: "X-Plain".into(),
                            value: Some("v".into()),
                            value_from: None,
                        },
                        Header {
                            name: "Authorization".into(),
                            value: None,
                            value_from: Some(HeaderValueFrom {
                                secret_key_ref: Some(secret.clone()),
                                env: None,
                            }),
                        },
                    ],
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let envs = secret_envs(&w);
        assert_eq!(
            envs,
            [SecretEnv {
                env: "BENCHMATRIX_HEADER_1_1".into(),
                secret,
                at: "workload.endpoints[1].headers[1]".into(),
            }]
        );
        let plan = to_env(&w);
        let text = serde_json::to_string(&plan).unwrap();
        assert!(!text.contains("api-token"), "{text}");
        assert_eq!(
            plan.endpoints[1].headers[1]
                .value_from
                .as_ref()
                .unwrap()
                .env
                .as_deref(),
            Some("BENCHMATRIX_HEADER_1_1")
        );
        assert_eq!(plan.endpoints[1].headers[0], w.endpoints[1].headers[0]);
        // What the load generator reads back passes its own checks.
        let mut errors = Vec::new();
        for (i, e) in plan.endpoints.iter().enumerate() {
            crate::plan::check::check_endpoint(e, &format!("e[{i}]"), &mut errors);
        }
        assert!(errors.is_empty(), "{errors:?}");
    }
}
