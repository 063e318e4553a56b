//! For test suites (this crate's and the harness's): a test that cannot run here because a tool
//! is missing (Docker, busybox, kubectl) says so and passes outside CI, and fails under CI,
//! where `.ci/run` installs every such tool: a skip must never read as green there.

/// Whether this is a CI run: `CI` set to anything but empty, `0` or `false`.
pub fn in_ci() -> bool {
    ci_value(std::env::var("CI").ok().as_deref())
}

fn ci_value(v: Option<&str>) -> bool {
    v.is_some_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// Skip the calling test, saying why, or fail it under CI. Call it and `return`.
#[track_caller]
pub fn skip(why: &str) {
    if in_ci() {
        panic!("cannot run under CI=true: {why} (CI installs what the tests need; see .ci/run)");
    }
    eprintln!("SKIP: {why}");
}

#[cfg(test)]
mod tests {
    #[test]
    fn what_counts_as_ci() {
        for (v, ci) in [
            (None, false),
            (Some(""), false),
            (Some("0"), false),
            (Some("False"), false),
            (Some("true"), true),
            (Some("1"), true),
        ] {
            assert_eq!(super::ci_value(v), ci, "{v:?}");
        }
    }
}
