//! `benchmatrix run FILE --secrets DIR`: header values a spec keeps in Secrets
//! (`valueFrom.secretKeyRef`), read from files laid out as a mounted Secret, DIR/NAME/KEY.
//!
//! Every value is read before anything starts, so a missing Secret is bad input (exit 2) with
//! its field path, not a cell that fails later. The values go to the load generator through its
//! environment, as on a cluster: its plan file names the variables, never the values.

use std::path::Path;

use benchmatrix_loadgen::plan::SecretKeyRef;
use benchmatrix_loadgen::request::HeaderValues;
use benchmatrix_loadgen::request::build::clean_value;
use benchmatrix_loadgen::request::secrets::{secret_envs, to_env};

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
mod tests;
