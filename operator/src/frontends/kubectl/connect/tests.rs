use super::*;

/// Two contexts on two servers, each with its own namespace; `one` is current.
const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
current-context: one
clusters:
  - name: c1
    cluster: {server: "https://one.example:6443"}
  - name: c2
    cluster: {server: "https://two.example:6443"}
users:
  - name: u
    user: {token: t}
contexts:
  - name: one
    context: {cluster: c1, user: u, namespace: team-one}
  - name: two
    context: {cluster: c2, user: u}
"#;

fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn args(kubeconfig: Option<&Path>, context: Option<&str>, ns: Option<&str>) -> ConnectionArgs {
    ConnectionArgs {
        namespace: ns.map(str::to_owned),
        context: context.map(str::to_owned),
        kubeconfig: kubeconfig.map(Path::to_path_buf),
    }
}

async fn server_and_namespace(a: &ConnectionArgs, env: &Environment) -> (String, String) {
    let t = target(a, env).await.unwrap();
    (t.config.cluster_url.to_string(), t.config.default_namespace)
}

#[tokio::test]
async fn the_context_picks_the_server_and_its_namespace_and_dash_n_wins() {
    let dir = tempfile::tempdir().unwrap();
    let kc = file(dir.path(), "config", KUBECONFIG);
    let none = Environment::default();
    assert_eq!(
        server_and_namespace(&args(Some(&kc), None, None), &none).await,
        ("https://one.example:6443/".into(), "team-one".into())
    );
    // A context without a namespace: "default", as kubectl.
    assert_eq!(
        server_and_namespace(&args(Some(&kc), Some("two"), None), &none).await,
        ("https://two.example:6443/".into(), "default".into())
    );
    let t = target(&args(Some(&kc), Some("two"), Some("bench")), &none)
        .await
        .unwrap();
    assert_eq!(t.config.default_namespace, "bench");
    assert!(t.namespace_from_flag);
    assert_eq!(t.context.as_deref(), Some("two"));
    let err = target(&args(Some(&kc), Some("three"), None), &none)
        .await
        .unwrap_err();
    assert!(err.contains("\"three\""), "{err}");
}

#[tokio::test]
async fn kubeconfig_env_then_home_as_kubectl_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let kc = file(dir.path(), "config", KUBECONFIG);
    // $KUBECONFIG: the first file to set current-context wins; a missing one is skipped.
    let other = file(
        dir.path(),
        "other",
        &KUBECONFIG.replace("current-context: one", "current-context: two"),
    );
    let list = std::env::join_paths([dir.path().join("missing"), other, kc.clone()]).unwrap();
    let env = Environment {
        kubeconfig: Some(list),
        home: None,
    };
    assert_eq!(
        server_and_namespace(&args(None, None, None), &env).await.0,
        "https://two.example:6443/"
    );
    // --kubeconfig beats $KUBECONFIG.
    assert_eq!(
        server_and_namespace(&args(Some(&kc), None, None), &env)
            .await
            .0,
        "https://one.example:6443/"
    );
    // ~/.kube/config when $KUBECONFIG is unset.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".kube")).unwrap();
    file(&home.path().join(".kube"), "config", KUBECONFIG);
    let env = Environment {
        kubeconfig: None,
        home: Some(home.path().to_path_buf()),
    };
    assert_eq!(
        server_and_namespace(&args(None, None, None), &env).await.1,
        "team-one"
    );
}

#[tokio::test]
async fn a_kubeconfig_list_of_missing_files_is_no_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".kube")).unwrap();
    file(&home.path().join(".kube"), "config", KUBECONFIG);
    let list =
        std::env::join_paths([dir.path().join("gone"), dir.path().join("also-gone")]).unwrap();
    let env = Environment {
        kubeconfig: Some(list),
        home: Some(home.path().to_path_buf()),
    };
    // Not ~/.kube/config either: $KUBECONFIG replaces it, as for kubectl.
    assert!(
        read_kubeconfig(&args(None, None, None), &env)
            .unwrap()
            .is_none()
    );
    // So a --context has nowhere to be found, rather than "no current-context".
    let err = target(&args(None, Some("one"), None), &env)
        .await
        .unwrap_err();
    assert!(err.contains("--context one: no kubeconfig"), "{err}");
}

#[tokio::test]
async fn no_kubeconfig_at_all_says_where_it_looked() {
    let empty_home = tempfile::tempdir().unwrap();
    let env = Environment {
        kubeconfig: None,
        home: Some(empty_home.path().to_path_buf()),
    };
    let err = target(&args(None, Some("one"), None), &env)
        .await
        .unwrap_err();
    assert!(err.contains("--context one"), "{err}");
    assert!(err.contains("$KUBECONFIG"), "{err}");
    let broken = file(empty_home.path(), "broken", "clusters: [");
    let err = target(&args(Some(&broken), None, None), &env)
        .await
        .unwrap_err();
    assert!(err.starts_with("kubeconfig:"), "{err}");
}
