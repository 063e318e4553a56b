//! Nodes, as a step sees them through their own files, journal and service manager and their
//! Node objects: one file per thing asked of them. Each file owns its phrases; none reaches into
//! another's helpers.

mod annotations;
mod files;
mod journal;
mod kubelet_ca;
mod labels;
mod services;
