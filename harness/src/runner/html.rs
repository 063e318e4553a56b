//! The run as one self-contained HTML page (`--html PATH`): no script, no network, inline CSS
//! and SVG, so it opens anywhere a CI system keeps artifacts. Per profile and feature, each
//! scenario with its result and steps (a failed one open, its message under the step), and its
//! timeline: a lane per signer that rotated, with each certificate's validity window and the
//! instant it was issued; a lane per node with its rendered configs, states, ControllerConfig
//! syncs, kubelet-ca.crt changes and reboots; the paused-pool alerts. Below it, the same events
//! as a table.

use super::identity::{FileScenarios, ScenarioId, anchor};
use super::report::{FeatureResults, ScenarioOutcome};
use super::{ScenarioTimeline, Summary};
use crate::profile::Profile;
use crate::scenario::timeline::TimelineEvent;
use std::fmt::Write as _;
use time::{Duration, OffsetDateTime};

/// Everything the page shows.
pub struct Page<'a> {
    pub summary: &'a Summary,
    /// Per profile, the run's results (read from its Cucumber JSON).
    pub results: Vec<(Profile, Vec<FeatureResults>)>,
    pub command: &'a str,
    pub verdict: &'a str,
}

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1040px; color: #1f2328; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 15px; margin: 18px 0 6px; }
code, .mono { font: 12px ui-monospace, monospace; }
.verdict { display: inline-block; padding: 2px 10px; border-radius: 10px; color: #fff; font-weight: 600; }
.verdict.passed { background: #1a7f37; } .verdict.failed { background: #cf222e; } .verdict.interrupted { background: #9a6700; }
details.scenario { border: 1px solid #d0d7de; border-radius: 6px; margin: 6px 0; padding: 4px 10px; }
details.scenario.fail { border-color: #cf222e; }
details.scenario > summary { cursor: pointer; }
.result { font-weight: 700; display: inline-block; width: 3.2em; }
a.anchor { color: #8c959f; text-decoration: none; }
.result.pass { color: #1a7f37; } .result.fail { color: #cf222e; }
ol.steps { margin: 6px 0; padding-left: 22px; }
ol.steps li.passed::marker { color: #1a7f37; } ol.steps li.failed, ol.steps li.undefined { color: #cf222e; }
ol.steps li.skipped { color: #6e7781; }
pre.message { background: #fff8f8; border-left: 3px solid #cf222e; padding: 6px 8px; white-space: pre-wrap; margin: 4px 0; }
svg.timeline { display: block; margin: 8px 0; background: #fafbfc; border: 1px solid #eaeef2; }
svg.timeline text { font: 11px system-ui, sans-serif; fill: #1f2328; }
svg.timeline text.axis { fill: #57606a; }
table.events { border-collapse: collapse; font-size: 12px; margin: 6px 0 10px; }
table.events td, table.events th { border-bottom: 1px solid #eaeef2; padding: 2px 8px; text-align: left; vertical-align: top; }
table.events td:nth-child(-n+3) { white-space: nowrap; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin-right: 4px; vertical-align: -1px; }
"#;

/// The colour of an event's marker.
fn colour(kind: &str) -> &'static str {
    match kind {
        "issued" => "#0969da",
        "config" => "#8250df",
        "state" => "#bf8700",
        "controllerconfig" => "#1b7c83",
        "kubelet-ca" => "#1a7f37",
        "reboot" => "#cf222e",
        "alert" => "#fb8500",
        "kubelet-accepts" => "#2da44e",
        "kubelet-refuses" => "#82071e",
        _ => "#57606a",
    }
}

/// Simulated time since the scenario started, as `day D HH:MM`.
fn offset(started: OffsetDateTime, at: OffsetDateTime) -> String {
    let d = at - started;
    let minutes = d.whole_minutes().max(0);
    format!(
        "day {} {:02}:{:02}",
        minutes / 1440,
        (minutes % 1440) / 60,
        minutes % 60
    )
}

/// Where an instant goes on a timeline's horizontal axis.
struct Scale {
    start: OffsetDateTime,
    end: OffsetDateTime,
}

impl Scale {
    const LEFT: f64 = 230.0;
    const WIDTH: f64 = 700.0;

    fn x(&self, at: OffsetDateTime) -> f64 {
        let at = at.clamp(self.start, self.end);
        Self::LEFT
            + Self::WIDTH * ((at - self.start).as_seconds_f64() / (self.end - self.start).as_seconds_f64())
    }
}

/// The timeline of one scenario as an SVG drawing.
fn timeline_svg(t: &ScenarioTimeline) -> String {
    let start = t.started;
    let last = t.events.iter().map(|e| e.at).max().unwrap_or(start).max(t.ended);
    let span = (last - start).max(Duration::hours(1));
    let scale = Scale {
        start,
        end: start + span + span / 20,
    };
    let lanes = lanes(t);
    let lane_h = 26.0;
    let height = 34.0 + lane_h * lanes.len() as f64;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="960" height="{height}" role="img" aria-label="timeline of {}">"#,
        esc(&t.scenario)
    );
    axis(&mut svg, &scale, height);
    for (i, lane) in lanes.iter().enumerate() {
        lane_svg(&mut svg, t, lane, 24.0 + lane_h * i as f64, &scale);
    }
    svg.push_str("</svg>");
    svg
}

/// The timeline's lanes: signers that rotated (issued more than once), then nodes, then alerts.
fn lanes(t: &ScenarioTimeline) -> Vec<String> {
    let mut lanes: Vec<String> = Vec::new();
    for e in &t.events {
        if !lanes.contains(&e.lane) && (e.kind != "issued" || t.times_issued(&e.lane) > 1) {
            lanes.push(e.lane.clone());
        }
    }
    lanes.sort_by_key(|l| {
        let first = t.events.iter().find(|e| &e.lane == l);
        match first.map(|e| e.kind) {
            Some("issued") => 0,
            Some("alert") => 2,
            _ => 1,
        }
    });
    lanes
}

/// The axis: about eight ticks, in hours or days.
fn axis(svg: &mut String, scale: &Scale, height: f64) {
    let (start, end) = (scale.start, scale.end);
    let step = {
        let hours = (end - start).whole_hours().max(1);
        let raw = (hours / 8).max(1);
        if raw < 24 {
            Duration::hours(raw)
        } else {
            Duration::days((raw + 23) / 24)
        }
    };
    let mut tick = start;
    while tick <= end {
        let px = scale.x(tick);
        let _ = write!(
            svg,
            r##"<line x1="{px:.1}" y1="18" x2="{px:.1}" y2="{height}" stroke="#eaeef2"/><text class="axis" x="{px:.1}" y="12" text-anchor="middle">{}</text>"##,
            esc(&offset(start, tick).replace(" 00:00", ""))
        );
        tick += step;
    }
}

/// One lane at height `y`: its name, each certificate's validity window, each event's marker.
fn lane_svg(svg: &mut String, t: &ScenarioTimeline, lane: &str, y: f64, scale: &Scale) {
    let _ = write!(
        svg,
        r#"<text x="8" y="{:.1}">{}</text>"#,
        y + 15.0,
        esc(&truncate(lane, 34))
    );
    let events: Vec<&TimelineEvent> = t.events.iter().filter(|e| e.lane == lane).collect();
    // Successive certificates overlap (a new one is issued before the old one expires): they
    // alternate between two rows.
    for (n, e) in events.iter().filter(|e| e.not_before.is_some()).enumerate() {
        if let (Some(nb), Some(na)) = (e.not_before, e.not_after) {
            let (x0, x1) = (scale.x(nb), scale.x(na));
            let _ = write!(
                svg,
                r##"<rect class="validity" data-lane="{}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="9" rx="2" fill="#ddf4ff" stroke="#54aeff"><title>{} valid {} to {}</title></rect>"##,
                esc(lane),
                y + if n % 2 == 0 { 2.0 } else { 12.0 },
                (x1 - x0).max(1.0),
                esc(&e.text),
                crate::pki::rfc3339(nb),
                crate::pki::rfc3339(na)
            );
        }
    }
    // Events closer than a marker's width (the same look, or an hour apart over weeks)
    // are nudged right so each stays visible; the title and the table keep the exact time.
    let mut last_x = f64::MIN;
    for e in &events {
        let cx = scale.x(e.at).max(last_x + 8.0);
        last_x = cx;
        let _ = write!(
            svg,
            r#"<circle class="event {}" data-lane="{}" cx="{:.1}" cy="{:.1}" r="5" fill="{}"><title>{}: {}</title></circle>"#,
            e.kind,
            esc(lane),
            cx,
            y + 11.0,
            colour(e.kind),
            esc(&offset(scale.start, e.at)),
            esc(&e.text)
        );
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    format!("{}…", text.chars().take(max - 1).collect::<String>())
}

fn legend() -> String {
    let mut out = String::from(r#"<p class="legend">"#);
    for (kind, what) in [
        ("issued", "certificate issued (bar: its validity)"),
        ("config", "rendered config"),
        ("state", "state"),
        ("controllerconfig", "ControllerConfig synced"),
        ("kubelet-ca", "kubelet-ca.crt changed"),
        ("reboot", "boot"),
        (
            "kubelet-accepts",
            "kubelet accepts the kube-apiserver's client certificate",
        ),
        ("kubelet-refuses", "kubelet refuses it (oc logs breaks)"),
        ("kubelet-down", "kubelet not answering"),
        ("alert", "alert"),
    ] {
        let _ = write!(
            out,
            r#"<span><i style="background:{}"></i>{what}</span>"#,
            colour(kind)
        );
    }
    out.push_str("</p>");
    out
}

/// The page.
pub fn render(page: &Page<'_>) -> String {
    let s = page.summary;
    let mut out = head(page);
    // A small run shows every scenario open; a large one opens only the failed ones.
    let total: usize = page
        .results
        .iter()
        .flat_map(|(_, f)| f.iter())
        .map(|f| f.scenarios.len())
        .sum();
    let open_all = total <= 6;
    let ids = scenario_ids(page);
    // How many scenarios on the page share each anchor: hashed only where two would.
    let mut shared: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for ((profile, _), features) in page.results.iter().zip(&ids) {
        for id in features.iter().flatten() {
            *shared.entry(anchor(profile.as_str(), id, true)).or_default() += 1;
        }
    }
    for ((profile, features), feature_ids) in page.results.iter().zip(&ids) {
        let _ = write!(out, r#"<h2 id="{profile}">{profile}</h2>"#);
        for (feature, scenario_ids) in features.iter().zip(feature_ids) {
            let file = std::path::Path::new(&feature.uri)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let _ = write!(
                out,
                "<h3>{} <span class=\"mono\">{}</span></h3>",
                esc(&feature.name),
                esc(&file)
            );
            for (scenario, id) in feature.scenarios.iter().zip(scenario_ids) {
                let distinct = shared.get(&anchor(profile.as_str(), id, true)) == Some(&1);
                let anchor = anchor(profile.as_str(), id, distinct);
                let open = scenario.failed || open_all;
                scenario_html(&mut out, s, (*profile, &file), scenario, id, &anchor, open);
            }
        }
    }
    if !s.skipped.is_empty() {
        let _ = write!(out, "<h2>Skipped ({})</h2><ul>", s.skipped.len());
        for skip in &s.skipped {
            let _ = write!(out, "<li>{}</li>", esc(skip));
        }
        out.push_str("</ul>");
    }
    out.push_str("</body></html>\n");
    out
}

/// The page's head and top: the summary line, the verdict, the command, the undefined steps,
/// the legend.
fn head(page: &Page<'_>) -> String {
    let s = page.summary;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>mco-conformance: {}</title><style>{STYLE}</style></head><body>"#,
        esc(&s.line())
    );
    let _ = write!(
        out,
        r#"<h1>mco-conformance run <span class="verdict {v}" id="verdict">{v}</span></h1><p id="summary">{}</p><p class="mono">{}</p>"#,
        esc(&s.line()),
        esc(page.command),
        v = esc(page.verdict),
    );
    if !s.undefined.is_empty() {
        out.push_str(r#"<h2>Undefined steps</h2><ul id="undefined">"#);
        for u in &s.undefined {
            let _ = write!(out, "<li><code>{}</code></li>", esc(&u.to_string()));
        }
        out.push_str("</ul>");
    }
    out.push_str(&legend());
    out
}

/// Each scenario's identity, per profile and feature, read from the feature files the results
/// name.
fn scenario_ids(page: &Page<'_>) -> Vec<Vec<Vec<ScenarioId>>> {
    page.results
        .iter()
        .map(|(_, features)| {
            features
                .iter()
                .map(|f| {
                    let known = FileScenarios::read(std::path::Path::new(&f.uri));
                    f.scenarios.iter().map(|s| known.id(s.line, &s.name)).collect()
                })
                .collect()
        })
        .collect()
}

/// One scenario of `file` in `profile`'s results: its result, its steps (a message under each
/// that did not pass) and, where the run recorded it, its timeline.
fn scenario_html(
    out: &mut String,
    s: &Summary,
    (profile, file): (Profile, &str),
    scenario: &ScenarioOutcome,
    id: &ScenarioId,
    anchor: &str,
    open: bool,
) {
    let (class, result) = if scenario.failed {
        ("fail", "FAIL")
    } else {
        ("pass", "PASS")
    };
    let _ = write!(
        out,
        r##"<details class="scenario {class}" id="{}"{}><summary><span class="result {class}">{result}</span> {} <a class="anchor" href="#{}" title="a link to this scenario">#</a> <span class="mono">{}:{}</span></summary><ol class="steps">"##,
        esc(anchor),
        if open { " open" } else { "" },
        esc(&id.scenario()),
        esc(anchor),
        esc(file),
        scenario.line
    );
    for step in &scenario.steps {
        let _ = write!(
            out,
            r#"<li class="{}">{} <span class="mono">(line {}, {})</span>"#,
            esc(&step.status),
            esc(&step.step),
            step.line,
            esc(&step.status)
        );
        if step.status != "passed"
            && let Some(m) = &step.message
        {
            let _ = write!(out, r#"<pre class="message">{}</pre>"#, esc(m));
        }
        out.push_str("</li>");
    }
    out.push_str("</ol>");
    let timeline = s
        .timelines
        .iter()
        .find(|t| t.profile == profile && t.file == file && t.line as u64 == scenario.line);
    if let Some(t) = timeline {
        timeline_html(out, t);
    }
    out.push_str("</details>");
}

/// A scenario's timeline: the drawing, the signers that did not rotate, the events as a table.
fn timeline_html(out: &mut String, t: &ScenarioTimeline) {
    out.push_str(&timeline_svg(t));
    let unchanged: Vec<&str> = {
        let mut lanes: Vec<&str> = Vec::new();
        for e in t.events.iter().filter(|e| e.kind == "issued") {
            if !lanes.contains(&e.lane.as_str()) && t.times_issued(&e.lane) == 1 {
                lanes.push(&e.lane);
            }
        }
        lanes
    };
    if !unchanged.is_empty() {
        let _ = write!(
            out,
            "<p class=\"mono\">signers that did not rotate: {}</p>",
            esc(&unchanged.join(", "))
        );
    }
    out.push_str(r#"<table class="events"><tr><th>simulated</th><th>when</th><th>what</th><th></th></tr>"#);
    for e in &t.events {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&offset(t.started, e.at)),
            esc(&crate::pki::rfc3339(e.at)),
            esc(&e.lane),
            esc(&e.text)
        );
    }
    out.push_str("</table>");
}
