//! What kind of file a command was given, so one given the wrong kind can say what it
//! expected instead of failing on a field (or running something nobody asked for).
//!
//! `size`, `compare` and `report` read results; `run` and `size` read a BenchmarkRun to run.
//! The two look alike (a BenchmarkRun from `kubectl get -o yaml` carries both), so the
//! difference is told from the fields alone, before any of them is parsed in full.

/// The kind of a YAML document, as far as the commands care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileKind {
    /// Nothing but blanks and comments.
    Empty,
    /// Not YAML, or not a mapping at the top.
    NotAnObject(String),
    /// An object of another kind (a Deployment, a ConfigMap ...).
    OtherKind(String),
    /// A BenchmarkRun with no status: something to run, no results yet.
    Spec {
        /// It has `spec.sizing`.
        sizing: bool,
    },
    /// Results: a bare status (`status.yaml`) or a BenchmarkRun carrying one.
    Results,
}

impl FileKind {
    /// Classifies `text`.
    pub fn of(text: &str) -> FileKind {
        if text.lines().all(|l| {
            let l = l.trim();
            l.is_empty() || l.starts_with('#') || l == "---" || l == "..."
        }) {
            return FileKind::Empty;
        }
        let value = match serde_yaml::from_str::<serde_yaml::Value>(text) {
            Ok(v) => v,
            Err(e) => return FileKind::NotAnObject(format!("not YAML ({e})")),
        };
        let Some(top) = value.as_mapping() else {
            return FileKind::NotAnObject("not a YAML object".into());
        };
        if let Some(kind) = top.get("kind").and_then(serde_yaml::Value::as_str)
            && kind != crate::resource::validate::KIND
        {
            return FileKind::OtherKind(kind.to_owned());
        }
        let has_status = top
            .get("status")
            .and_then(serde_yaml::Value::as_mapping)
            .is_some_and(|s| !s.is_empty());
        if top.contains_key("spec") && !has_status {
            let sizing = value.get("spec").and_then(|s| s.get("sizing")).is_some();
            return FileKind::Spec { sizing };
        }
        FileKind::Results
    }

    /// The file in words, for "FILE is ..., COMMAND expected ...".
    pub fn describe(&self) -> String {
        match self {
            FileKind::Empty => "empty".into(),
            FileKind::NotAnObject(what) => what.clone(),
            FileKind::OtherKind(kind) => format!("a {kind}, not a BenchmarkRun"),
            FileKind::Spec { .. } => {
                "a BenchmarkRun to run, with no results yet (no status)".into()
            }
            FileKind::Results => "the results of a run".into(),
        }
    }
}

/// What the commands that read results accept, for their messages.
pub const RESULTS: &str = "the results of a finished run: the status.yaml that `benchmatrix \
                           run` writes into its --out folder, or `kubectl get bmr NAME -o yaml` \
                           of a run that has ended";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_told_from_its_fields() {
        let spec = include_str!("../../../manifests/samples/quickstart.yaml");
        let sizing = include_str!("../../../manifests/samples/sizing.yaml");
        assert_eq!(FileKind::of(""), FileKind::Empty);
        assert_eq!(FileKind::of("# nothing\n---\n"), FileKind::Empty);
        assert_eq!(FileKind::of(spec), FileKind::Spec { sizing: false });
        assert_eq!(FileKind::of(sizing), FileKind::Spec { sizing: true });
        assert_eq!(
            FileKind::of("phase: Succeeded\ncells: []\n"),
            FileKind::Results
        );
        let run = format!("{spec}status:\n  phase: Succeeded\n");
        assert_eq!(FileKind::of(&run), FileKind::Results);
        assert_eq!(
            FileKind::of("kind: Deployment\nspec: {}\n"),
            FileKind::OtherKind("Deployment".into())
        );
        assert!(matches!(FileKind::of("- a\n"), FileKind::NotAnObject(_)));
        assert!(matches!(FileKind::of("a: [\n"), FileKind::NotAnObject(_)));
    }
}
