//! The writes of a decision, its I/O half: server-side apply of child objects under one field manager,
//! deletions, the status patch and Events.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::adapter::{Action, Child, ChildKind};
use super::error::Error;
use crate::engine::Note;
use crate::resource::{BenchmarkRun, BenchmarkRunStatus};

/// The field manager of every write the operator makes, so server-side apply knows which
/// fields are the operator's (and a user's `kubectl edit` of other fields survives).
pub const FIELD_MANAGER: &str = "benchmatrix-operator";

/// Carries out the actions in order.
pub async fn apply_actions(
    client: &kube::Client,
    run: &BenchmarkRun,
    actions: &[Action],
) -> Result<(), Error> {
    let ns = run
        .namespace()
        .ok_or(Error::MissingObjectKey("namespace"))?;
    for action in actions {
        match action {
            Action::Apply(Child::Deployment(o)) => ssa::<Deployment>(client, &ns, o).await?,
            Action::Apply(Child::Service(o)) => ssa::<Service>(client, &ns, o).await?,
            Action::Apply(Child::ConfigMap(o)) => ssa::<ConfigMap>(client, &ns, o).await?,
            Action::Apply(Child::Job(o)) => ssa::<Job>(client, &ns, o).await?,
            Action::Delete(kind, name) => match kind {
                ChildKind::Deployment => delete::<Deployment>(client, &ns, name).await?,
                ChildKind::Service => delete::<Service>(client, &ns, name).await?,
                ChildKind::ConfigMap => delete::<ConfigMap>(client, &ns, name).await?,
                ChildKind::Job => delete::<Job>(client, &ns, name).await?,
            },
            Action::DeleteRun => {
                delete::<BenchmarkRun>(client, &ns, &run.name_any()).await?;
            }
        }
    }
    Ok(())
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
/// resourceVersion of the run as written.
pub async fn write_status(
    client: &kube::Client,
    run: &BenchmarkRun,
    status: &BenchmarkRunStatus,
) -> Result<Option<String>, Error> {
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
    Ok(written.metadata.resource_version)
}

/// Publishes Events on the run. A refused Event is logged, never fatal: Events are for people,
/// the status is the record.
pub async fn publish_events(recorder: &Recorder, run: &BenchmarkRun, events: &[Note]) {
    let reference = run.object_ref(&());
    for e in events {
        let event = Event {
            type_: if e.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: e.reason.clone(),
            note: Some(e.note.clone()),
            action: "Reconcile".into(),
            secondary: None,
        };
        if let Err(err) = recorder.publish(&event, &reference).await {
            tracing::warn!(error = %err, reason = %e.reason, "could not publish an event");
        }
    }
}

/// Marks a run that cannot be decoded as Failed, by a merge patch through the untyped API. The
/// patch is the same every time, and the API server does not write an unchanged object, so
/// this cannot trigger itself.
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
    let body = serde_json::json!({
        "status": {
            "phase": "Failed",
            "message": format!("invalid spec: the object does not match the BenchmarkRun schema: {}", invalid.error),
        }
    });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
        .await?;
    Ok(())
}
