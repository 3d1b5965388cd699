//! Leader election through a `coordination.k8s.io` Lease, for an operator run with more than
//! one replica: only the holder reconciles, a standby takes over when the Lease expires (or at
//! once, when the leader releases it on a graceful shutdown).
//!
//! The Lease is kept by `kube-lease-manager` (server-side apply on the Lease, tolerant of clock
//! skew between nodes up to the grace period). What this module adds is fencing: the holder renews
//! `grace` seconds before the Lease would expire, and every Lease call has a timeout of a third of
//! that, so a renewal that fails or hangs is known to have failed while the Lease is still ours. On
//! any such failure, and when the Lease is seen held by another, this replica closes its gate at
//! once (`reconciler/gate.rs`): it stops reconciling before anyone else may start, and two leaders
//! never write. A manager that failed is made anew (a fresh one re-reads the Lease: if it is still
//! ours, leadership resumes at once).

use std::sync::Arc;
use std::time::Duration;

use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};

use crate::executors::cluster::reconciler::gate::Gate;
use crate::executors::cluster::telemetry::metrics::Metrics;

/// How this replica takes part in the election.
#[derive(Debug, Clone)]
pub struct Election {
    /// The Lease's namespace (the operator's own).
    pub namespace: String,
    /// The Lease's name.
    pub lease: String,
    /// This replica's identity in the Lease's `holderIdentity` (its pod name).
    pub identity: String,
    /// How long the Lease holds without a renewal, seconds.
    pub duration: u64,
}

impl Election {
    /// Seconds before expiry at which the holder renews: a third of the duration, at least 1 s.
    pub fn grace(&self) -> u64 {
        (self.duration / 3).clamp(1, self.duration.saturating_sub(1).max(1))
    }

    /// The timeout of each Lease call: a renewal is a read, a patch and a read again, and must
    /// end (well or not) within the grace period.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.grace() * 1000 / 3).max(Duration::from_millis(300))
    }

    /// A client for the Lease calls alone, with [`Election::call_timeout`].
    pub fn client(&self, mut config: kube::Config) -> Result<kube::Client, kube::Error> {
        let t = Some(self.call_timeout());
        (
            config.connect_timeout,
            config.read_timeout,
            config.write_timeout,
        ) = (t, t, t);
        kube::Client::try_from(config)
    }

    async fn manager(&self, client: &kube::Client) -> kube_lease_manager::Result<LeaseManager> {
        LeaseManagerBuilder::new(client.clone(), &self.lease)
            .with_namespace(&self.namespace)
            .with_identity(&self.identity)
            .with_duration(self.duration)
            .with_grace(self.grace())
            .with_field_manager(format!("benchmatrix-operator-{}", self.identity))
            .build()
            .await
    }
}

/// Takes part in the election until `release` resolves, then gives the Lease up (so a standby
/// takes over at once rather than after the Lease expires). Sets `gate`'s leadership at every
/// change and calls `on_lead` each time this replica becomes the leader.
pub async fn take_part(
    election: Election,
    client: kube::Client,
    gate: Arc<Gate>,
    metrics: Arc<Metrics>,
    on_lead: impl Fn() + Send,
    release: impl Future<Output = ()> + Send,
) {
    tokio::pin!(release);
    let mut retry = Duration::from_millis(500);
    metrics.robustness.set_leader(false);
    loop {
        let manager = tokio::select! {
            m = election.manager(&client) => m,
            () = &mut release => return,
        };
        let manager = match manager {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, lease = %election.lease, "cannot reach the leader Lease; retrying");
                tokio::select! {
                    () = tokio::time::sleep(retry) => {}
                    () = &mut release => return,
                }
                retry = (retry * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        retry = Duration::from_millis(500);
        loop {
            tokio::select! {
                changed = manager.changed() => match changed {
                    Ok(leading) => note(&election, &gate, &metrics, leading, &on_lead),
                    Err(e) => {
                        // A renewal that failed: the Lease may be about to pass to another
                        // replica, so stop writing now; a new manager finds out whose it is.
                        if gate.is_leading() {
                            tracing::warn!(error = %e, "could not renew the leader Lease: stepping down");
                        } else {
                            tracing::debug!(error = %e, "leader Lease call failed");
                        }
                        note(&election, &gate, &metrics, false, &on_lead);
                        tokio::select! {
                            () = tokio::time::sleep(retry) => {}
                            () = &mut release => return,
                        }
                        break;
                    }
                },
                () = &mut release => {
                    let leading = gate.is_leading();
                    gate.set_leading(false);
                    metrics.robustness.set_leader(false);
                    if leading {
                        match manager.release().await {
                            Ok(()) => tracing::info!(lease = %election.lease, "leader Lease released"),
                            Err(e) => tracing::warn!(error = %e, "could not release the leader Lease; it expires by itself"),
                        }
                    }
                    return;
                }
            }
        }
    }
}

fn note(election: &Election, gate: &Gate, metrics: &Metrics, leading: bool, on_lead: &impl Fn()) {
    let was = gate.is_leading();
    let opened = gate.set_leading(leading);
    metrics.robustness.set_leader(leading);
    match (was, leading) {
        (false, true) => tracing::info!(
            identity = %election.identity, lease = %election.lease,
            "acquired the leader Lease: reconciling"
        ),
        (true, false) => tracing::warn!(
            identity = %election.identity, lease = %election.lease,
            "lost the leader Lease: stopped reconciling"
        ),
        _ => {}
    }
    if opened {
        on_lead();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renewal_ends_well_inside_the_grace_period() {
        let e = Election {
            namespace: "ns".into(),
            lease: "l".into(),
            identity: "pod-a".into(),
            duration: 15,
        };
        assert_eq!(e.grace(), 5);
        // A read, a patch and a read again, each within its timeout, end before the grace
        // period does: a failed renewal is known while the Lease is still ours.
        assert!(e.call_timeout() * 3 <= Duration::from_secs(e.grace()));
        let short = Election { duration: 2, ..e };
        assert_eq!(short.grace(), 1);
    }
}
