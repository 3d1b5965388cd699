//! The writes of a decision, its I/O half: server-side apply of child objects under one field
//! manager, deletions and the status patch (Events go out behind the reconcile:
//! `telemetry/events.rs`).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::Error;
use crate::executors::cluster::adapter::{Action, Child, ChildKind};
use crate::resource::{BenchmarkRun, BenchmarkRunStatus};

/// The field manager of every write the operator makes, so server-side apply knows which
/// fields are the operator's (and a user's `kubectl edit` of other fields survives).
pub const FIELD_MANAGER: &str = "benchmatrix-operator";

/// Carries out the actions, in order where the order matters and at once where it does not:
/// each of [`batches`] is sent together, and the next only once all of it is done. A step's
/// Deployment and Service, or the four deletions after a repetition, then cost one round trip
/// to the API server instead of one each, which a reconcile's time is mostly made of.
pub async fn apply_actions(
    client: &kube::Client,
    run: &BenchmarkRun,
    actions: &[Action],
) -> Result<(), Error> {
    let ns = run
        .namespace()
        .ok_or(Error::MissingObjectKey("namespace"))?;
    for batch in batches(actions) {
        futures::future::try_join_all(batch.iter().map(|a| carry_out(client, &ns, run, a))).await?;
    }
    Ok(())
}

/// `actions` cut, in order, into runs of actions that may go to the API server together. An
/// action starts a new batch when it must see the batch before it done:
/// - it changes an object the batch changes too (a deletion and an apply of one name keep their
///   order);
/// - it applies a Job while the batch applies other objects: the Job's pods mount the load plan
///   (a ConfigMap) and are started against the target, and a pod whose ConfigMap does not exist
///   yet waits out the kubelet's retry of the mount;
/// - it deletes the run, or follows its deletion.
pub fn batches(actions: &[Action]) -> Vec<&[Action]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, action) in actions.iter().enumerate() {
        let batch = &actions[start..i];
        let waits = batch.iter().any(|earlier| must_follow(action, earlier));
        if waits {
            out.push(batch);
            start = i;
        }
    }
    if start < actions.len() {
        out.push(&actions[start..]);
    }
    out
}

/// Whether `later` must wait until `earlier` is done (see [`batches`]).
fn must_follow(later: &Action, earlier: &Action) -> bool {
    match (later.child(), earlier.child()) {
        (Some(l), Some(e)) => {
            let job_after_apply = matches!(later, Action::Apply(Child::Job(_)))
                && matches!(earlier, Action::Apply(_));
            l == e || job_after_apply
        }
        // The run's deletion comes after everything before it, and before everything after.
        _ => true,
    }
}

async fn carry_out(
    client: &kube::Client,
    ns: &str,
    run: &BenchmarkRun,
    action: &Action,
) -> Result<(), Error> {
    match action {
        Action::Apply(Child::Deployment(o)) => ssa::<Deployment>(client, ns, o).await,
        Action::Apply(Child::Service(o)) => ssa::<Service>(client, ns, o).await,
        Action::Apply(Child::ConfigMap(o)) => ssa::<ConfigMap>(client, ns, o).await,
        Action::Apply(Child::Job(o)) => ssa::<Job>(client, ns, o).await,
        Action::Delete(kind, name) => match kind {
            ChildKind::Deployment => delete::<Deployment>(client, ns, name).await,
            ChildKind::Service => delete::<Service>(client, ns, name).await,
            ChildKind::ConfigMap => delete::<ConfigMap>(client, ns, name).await,
            ChildKind::Job => delete::<Job>(client, ns, name).await,
        },
        Action::DeleteRun => delete::<BenchmarkRun>(client, ns, &run.name_any()).await,
    }
}

/// An object of a namespace that the operator reads, applies and deletes through `Api`.
trait Namespaced:
    Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + Serialize
    + DeserializeOwned
    + std::fmt::Debug
{
}

impl<K> Namespaced for K where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug
{
}

async fn ssa<K: Namespaced>(client: &kube::Client, ns: &str, obj: &K) -> Result<(), Error> {
    let name = obj
        .meta()
        .name
        .clone()
        .ok_or(Error::MissingObjectKey("name"))?;
    Api::<K>::namespaced(client.clone(), ns)
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(obj),
        )
        .await?;
    Ok(())
}

async fn delete<K: Namespaced>(client: &kube::Client, ns: &str, name: &str) -> Result<(), Error> {
    // Background propagation: the Job's and Deployment's pods go too, without waiting here.
    match Api::<K>::namespaced(client.clone(), ns)
        .delete(name, &DeleteParams::background())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Writes the status by server-side apply on the status subresource, conditional on the run
/// being the version `run` was read at: the body carries its `metadata.resourceVersion`, which
/// the API server takes as a precondition and answers 409 Conflict when the run has changed
/// since. Fields the operator no longer sends are removed, since it owns them all. Returns the
/// run as written.
pub async fn write_status(
    client: &kube::Client,
    run: &BenchmarkRun,
    status: &BenchmarkRunStatus,
) -> Result<BenchmarkRun, Error> {
    let ns = run
        .namespace()
        .ok_or(Error::MissingObjectKey("namespace"))?;
    let mut body = serde_json::json!({
        "apiVersion": BenchmarkRun::api_version(&()),
        "kind": BenchmarkRun::kind(&()),
        "metadata": {},
        "status": serde_json::to_value(status)
            .map_err(|source| Error::Serialize { what: "status", source })?,
    });
    if let Some(version) = &run.metadata.resource_version {
        body["metadata"]["resourceVersion"] = version.clone().into();
    }
    let written = Api::<BenchmarkRun>::namespaced(client.clone(), &ns)
        .patch_status(
            &run.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await?;
    Ok(written)
}

/// Marks a run that cannot be decoded as Failed, by a merge patch through the untyped API: the
/// patch [`malformed_status`] writes. It is the same every time, and the API server does not
/// write an unchanged object, so this cannot trigger itself.
pub async fn mark_malformed(
    client: &kube::Client,
    invalid: &kube::core::error_boundary::InvalidObject,
) -> Result<(), Error> {
    let ns = invalid
        .metadata
        .namespace
        .as_deref()
        .ok_or(Error::MissingObjectKey("namespace"))?;
    let name = invalid
        .metadata
        .name
        .as_deref()
        .ok_or(Error::MissingObjectKey("name"))?;
    let resource = kube::core::ApiResource::erase::<BenchmarkRun>(&());
    let api: Api<kube::core::DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(&malformed_status(invalid)),
    )
    .await?;
    Ok(())
}

/// The merge patch that marks a run that cannot be decoded (`invalid`) as refused, as a spec
/// the operator refuses is: phase Failed, and condition SpecValid False with reason
/// InvalidSpec, both saying the decoder's words, so that `kubectl benchmatrix run` and a
/// `kubectl wait` read it as the refusal it is. The words are clipped: a decoder quotes the
/// value it could not read, which may be of any length. The condition's transition time is the
/// object's creation, the one time known of it that stays the same: the patch must not change
/// from one reconcile to the next.
pub fn malformed_status(invalid: &kube::core::error_boundary::InvalidObject) -> serde_json::Value {
    use crate::resource::conditions::{self, Reason};
    let mut message = format!(
        "invalid spec: the object does not match the BenchmarkRun schema: {}",
        invalid.error
    );
    crate::resource::bound::clip(&mut message, crate::resource::bound::SENTENCE_MAX);
    let since = invalid
        .metadata
        .creation_timestamp
        .clone()
        .unwrap_or_else(|| conditions::time_from_secs(0));
    let mut refused = Vec::new();
    conditions::set_condition(
        &mut refused,
        conditions::SPEC_VALID,
        conditions::status::FALSE,
        Reason::InvalidSpec,
        message.clone(),
        invalid.metadata.generation,
        &since,
    );
    serde_json::json!({
        "status": {
            "phase": crate::resource::RunPhase::Failed,
            "message": message,
            "conditions": refused,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;

    fn meta(name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        }
    }

    fn apply(kind: ChildKind, name: &str) -> Action {
        Action::Apply(match kind {
            ChildKind::Deployment => Child::Deployment(Box::new(Deployment {
                metadata: meta(name),
                ..Deployment::default()
            })),
            ChildKind::Service => Child::Service(Box::new(Service {
                metadata: meta(name),
                ..Service::default()
            })),
            ChildKind::ConfigMap => Child::ConfigMap(Box::new(ConfigMap {
                metadata: meta(name),
                ..ConfigMap::default()
            })),
            ChildKind::Job => Child::Job(Box::new(Job {
                metadata: meta(name),
                ..Job::default()
            })),
        })
    }

    fn sizes(actions: &[Action]) -> Vec<usize> {
        batches(actions).iter().map(|b| b.len()).collect()
    }

    /// A run that does not decode is marked refused as an invalid spec is, in words of bounded
    /// length, by the same patch on every reconcile (so the write cannot wake the reconcile
    /// that made it); the marked status reads back as a refusal.
    #[test]
    fn a_run_that_does_not_decode_is_marked_refused_the_same_way_every_time() {
        use crate::engine::verdict::outcome::Outcome;
        let invalid = kube::core::error_boundary::InvalidObject {
            error: format!(
                "invalid type: string \"{}\", expected u32",
                "<&>".repeat(100_000)
            ),
            metadata: ObjectMeta {
                generation: Some(3),
                ..meta("broken")
            },
        };
        let patch = malformed_status(&invalid);
        assert_eq!(patch, malformed_status(&invalid));
        let status: BenchmarkRunStatus = serde_json::from_value(patch["status"].clone()).unwrap();
        assert_eq!(status.phase, crate::resource::RunPhase::Failed);
        assert_eq!(Outcome::of(&status), Outcome::Refused);
        let message = status.message.as_deref().unwrap();
        assert!(
            message.starts_with(
                "invalid spec: the object does not match the BenchmarkRun schema: invalid type"
            ) && crate::resource::bound::json_len(message) <= crate::resource::bound::SENTENCE_MAX,
            "{message}"
        );
        let valid = &status.conditions[0];
        assert_eq!(
            (
                valid.type_.as_str(),
                valid.status.as_str(),
                valid.reason.as_str()
            ),
            ("SpecValid", "False", "InvalidSpec")
        );
        assert_eq!(valid.observed_generation, Some(3));
    }

    #[test]
    fn a_steps_deployment_and_service_go_together() {
        let deploy = [
            apply(ChildKind::Deployment, "x"),
            apply(ChildKind::Service, "x"),
        ];
        assert_eq!(sizes(&deploy), [2]);
    }

    #[test]
    fn a_job_waits_for_its_load_plan() {
        let start = [apply(ChildKind::ConfigMap, "x"), apply(ChildKind::Job, "x")];
        assert_eq!(sizes(&start), [1, 1]);
    }

    #[test]
    fn a_steps_deletions_go_together_and_before_what_follows_on_the_same_names() {
        let mut turn: Vec<Action> = [
            ChildKind::Job,
            ChildKind::ConfigMap,
            ChildKind::Service,
            ChildKind::Deployment,
        ]
        .into_iter()
        .map(|kind| Action::Delete(kind, "x".into()))
        .collect();
        assert_eq!(sizes(&turn), [4], "a repetition's four deletions");
        // The next repetition's objects have names of their own and join the deletions; an
        // object made again under a name being deleted waits for the deletion.
        turn.push(apply(ChildKind::Deployment, "y"));
        turn.push(apply(ChildKind::Service, "x"));
        assert_eq!(sizes(&turn), [5, 1]);
    }

    #[test]
    fn deleting_the_run_stands_alone() {
        let turn = [
            Action::Delete(ChildKind::Job, "x".into()),
            Action::DeleteRun,
            Action::Delete(ChildKind::Service, "x".into()),
        ];
        assert_eq!(sizes(&turn), [1, 1, 1]);
        assert!(batches(&[]).is_empty());
    }
}
