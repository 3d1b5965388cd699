//! The objects the operator makes for a run, and its view of them: [`build`] (each cell's
//! Deployment, Service, ConfigMap and load generator Job, pure), [`template`] (a run's pod
//! template merged with what the operator owns), [`images`] (the image allow-list, over parsed
//! references), [`pod_security`] (every pod judged before any is created), and
//! [`child_caches`] (the watches' caches the reconciles read the children back from).

pub mod build;
pub mod child_caches;
pub mod images;
pub mod pod_security;
pub mod template;
