//! The start limit: at most `MAX_STARTING` node containers start at once, measured on the
//! Docker engine's clock, and the count of overlapping intervals that measures it.

use super::node_image;
use harness::node::container::MAX_STARTING;
use harness::node::control::READY_LINE;
use harness::profile::Profile;
use harness::scenario::{NodeBackend, Scenario, ScenarioOptions};
use std::process::Command;

/// A missing agent image is named, not pulled from a registry.
/// An RFC 3339 time as Docker prints it (nanoseconds, `Z`).
fn docker_time(text: &str) -> time::OffsetDateTime {
    time::OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

/// The most intervals that hold one instant.
fn most_at_once(intervals: &[(time::OffsetDateTime, time::OffsetDateTime)]) -> usize {
    intervals
        .iter()
        .map(|(start, _)| intervals.iter().filter(|(s, e)| s <= start && start < e).count())
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_four_node_containers_start_at_once() {
    let image = image_or_skip!();
    let mut options = ScenarioOptions::new(Profile::Ocp416);
    options.nodes = vec![("worker".into(), 6)];
    options.backend = NodeBackend::Container { image };
    let s = Scenario::start(options).await.unwrap();
    // Each container from its process's start (Docker's `StartedAt`) to the init's ready line
    // (`docker logs -t`), both on the Docker engine's clock.
    let starting: Vec<_> = s
        .nodes
        .iter()
        .map(|node| {
            let id = node.container_id().unwrap();
            let out = Command::new("docker")
                .args(["inspect", "-f", "{{.State.StartedAt}}", &id])
                .output()
                .unwrap();
            let started = docker_time(&String::from_utf8_lossy(&out.stdout));
            let out = Command::new("docker").args(["logs", "-t", &id]).output().unwrap();
            let logs = String::from_utf8_lossy(&out.stdout);
            let ready = logs
                .lines()
                .find(|l| l.ends_with(READY_LINE))
                .and_then(|l| l.split(' ').next())
                .unwrap_or_else(|| panic!("{} printed its ready line: {logs}", node.name()));
            (started, docker_time(ready))
        })
        .collect();
    // The six start together, so without the limit all six would be starting at one instant.
    // (Fewer than four at once is fine: other tests' containers share the limit.)
    let most = most_at_once(&starting);
    assert!(
        most <= MAX_STARTING,
        "at most {MAX_STARTING} node containers start at once: {most} did ({starting:?})"
    );
    s.shutdown().await;
}

#[test]
fn overlapping_intervals_are_counted_at_their_busiest_instant() {
    let t = |ms: i64| time::OffsetDateTime::UNIX_EPOCH + time::Duration::milliseconds(ms);
    assert_eq!(most_at_once(&[]), 0);
    assert_eq!(
        most_at_once(&[(t(0), t(10)), (t(10), t(20))]),
        1,
        "one ends as the next starts"
    );
    assert_eq!(
        most_at_once(&[(t(0), t(10)), (t(5), t(20)), (t(6), t(7)), (t(15), t(30))]),
        3
    );
}
