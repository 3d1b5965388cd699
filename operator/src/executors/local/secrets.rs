//! `benchmatrix run FILE --secrets DIR`: header values a spec keeps in Secrets
//! (`valueFrom.secretKeyRef`), read from files laid out as a mounted Secret, DIR/NAME/KEY.
//!
//! Every value is read before anything starts, so a missing Secret is bad input (exit 2) with
//! its field path, not a cell that fails later. The values go to the load generator through its
//! environment, as on a cluster: its plan file names the variables, never the values.

use std::path::Path;

use benchmatrix_loadgen::request::build::clean_value;
use benchmatrix_loadgen::request::secrets::{secret_envs, to_env};
use benchmatrix_loadgen::request::{HeaderValues, SecretKeyRef};

use crate::resource::BenchmarkRunSpec;
use crate::resource::validate::FieldError;

/// Largest Secret file read: Kubernetes caps a whole Secret at 1 MiB.
const MAX_SECRET_FILE: u64 = 1024 * 1024;

/// The environment the load generator needs for `spec`'s Secret-held header values, read from
/// `dir` (`None`: no `--secrets` given). Problems are reported at the header's field path
/// (`spec.workload.endpoints[0].headers[1].valueFrom.secretKeyRef`) and never quote a value.
pub fn read(spec: &BenchmarkRunSpec, dir: Option<&Path>) -> Result<HeaderValues, Vec<FieldError>> {
    let mut values = HeaderValues::default();
    let mut errors = Vec::new();
    for s in secret_envs(&spec.workload) {
        let at = format!("spec.{}.valueFrom.secretKeyRef", s.at);
        let Some(dir) = dir else {
            errors.push(FieldError::new(
                at,
                format!(
                    "{} is not on this machine: give --secrets DIR, a folder with one folder per Secret and one file per key (DIR/{}/{}), laid out as a mounted Secret",
                    s.secret, s.secret.name, s.secret.key
                ),
            ));
            continue;
        };
        match read_one(dir, &s.secret) {
            Ok(v) => values.insert(s.env, v),
            Err(why) => errors.push(FieldError::new(at, why)),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // The load generator's own check on the values it will be given (the size of the headers
    // with them), run now so that it cannot refuse them once the cell has started.
    let plan = to_env(&spec.workload);
    HeaderValues::read(&plan, |env| values.get(env).map(Into::into)).map_err(|errs| {
        errs.into_iter()
            .map(|e| FieldError::new(format!("spec.{}", e.path), e.message))
            .collect::<Vec<_>>()
    })?;
    Ok(values)
}

/// One value: the file DIR/NAME/KEY, with line breaks at its end dropped.
fn read_one(dir: &Path, secret: &SecretKeyRef) -> Result<String, String> {
    let path = dir.join(&secret.name).join(&secret.key);
    let shown = path.display();
    let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("{secret}: no file {shown} (--secrets DIR holds DIR/NAME/KEY)")
        }
        _ => format!("{secret}: cannot read {shown}: {e}"),
    })?;
    if !meta.is_file() {
        return Err(format!("{secret}: {shown} is not a file"));
    }
    if meta.len() > MAX_SECRET_FILE {
        return Err(format!(
            "{secret}: {shown} is larger than the 1 MiB a Secret may hold"
        ));
    }
    let raw = std::fs::read(&path).map_err(|e| format!("{secret}: cannot read {shown}: {e}"))?;
    let text =
        String::from_utf8(raw).map_err(|_| format!("{secret}: {shown} is not valid UTF-8"))?;
    clean_value(&text)
        .map(str::to_owned)
        .map_err(|why| format!("{secret}: the value in {shown} {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: post}
spec:
  configurations: [{name: x1, mode: single, cpu: "1"}]
  workload:
    endpoints:
      - name: order
        path: /orders
        method: POST
        headers:
          - {name: Content-Type, value: application/json}
          - name: Authorization
            valueFrom: {secretKeyRef: {name: api-token, key: token}}
        body: '{"item": 1}'
    phases: [{name: p, duration: 1s, load: [{endpoint: order, connections: 1}]}]
"#;

    fn spec() -> BenchmarkRunSpec {
        crate::resource::validate::parse_benchmark_run(RUN)
            .unwrap()
            .spec
    }

    #[test]
    fn a_value_is_read_from_dir_name_key_without_its_trailing_newline() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("api-token")).unwrap();
        std::fs::write(dir.path().join("api-token/token"), "Bearer s3cret\n").unwrap();
        let values = read(&spec(), Some(dir.path())).unwrap();
        let got: Vec<_> = values.iter().collect();
        assert_eq!(got, [("BENCHMATRIX_HEADER_0_1", "Bearer s3cret")]);
    }

    #[test]
    fn a_missing_folder_file_or_flag_is_refused_at_the_header_path() {
        let at = "spec.workload.endpoints[0].headers[1].valueFrom.secretKeyRef";
        let errs = read(&spec(), None).unwrap_err();
        assert_eq!(errs[0].path, at);
        assert!(errs[0].message.contains("--secrets DIR"), "{errs:?}");
        assert!(errs[0].message.contains("api-token/token"), "{errs:?}");

        let dir = tempfile::tempdir().unwrap();
        let errs = read(&spec(), Some(dir.path())).unwrap_err();
        assert_eq!(errs[0].path, at);
        assert!(errs[0].message.contains("no file"), "{errs:?}");

        std::fs::create_dir(dir.path().join("api-token")).unwrap();
        std::fs::write(
            dir.path().join("api-token/token"),
            "Bearer a\nX-Injected: 1",
        )
        .unwrap();
        let errs = read(&spec(), Some(dir.path())).unwrap_err();
        assert!(errs[0].message.contains("line break"), "{errs:?}");
        assert!(
            !errs[0].message.contains("Bearer"),
            "never quotes the value: {errs:?}"
        );

        // Headers that grow past the limit with the value read are refused now, not when the
        // load generator starts.
        std::fs::write(dir.path().join("api-token/token"), "x".repeat(9000)).unwrap();
        let errs = read(&spec(), Some(dir.path())).unwrap_err();
        assert_eq!(
            errs[0].path, "spec.workload.endpoints[0].headers",
            "{errs:?}"
        );
        assert!(errs[0].message.contains("8192"), "{errs:?}");
    }
}
