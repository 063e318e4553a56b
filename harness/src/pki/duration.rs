//! Durations as people write them in fixtures and steps: `365d`, `24h`, `90m`, `30s`, and in
//! words, `292 days`, `12 hours`, `1 day`.

use time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {text:?}: expected a number and a unit (d, h, m, s, or days, hours, minutes, seconds)"
)]
pub struct DurationError {
    pub text: String,
}

pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let bad = || DurationError {
        text: text.to_string(),
    };
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = t.split_at(split);
    let n: i64 = number.parse().map_err(|_| bad())?;
    let unit = unit.trim();
    let unit_seconds: i64 = match unit {
        "d" | "day" | "days" => 86_400,
        "h" | "hour" | "hours" => 3600,
        "m" | "minute" | "minutes" => 60,
        "s" | "second" | "seconds" => 1,
        "y" | "year" | "years" => 365 * 86_400,
        _ => return Err(bad()),
    };
    // A number too large for a duration is bad input, not an overflow panic.
    n.checked_mul(unit_seconds).map(Duration::seconds).ok_or_else(bad)
}

/// The shortest exact way to write `d` (`365d`, `36h`, `90m`, `45s`).
pub fn format_duration(d: Duration) -> String {
    let s = d.whole_seconds();
    match s {
        s if s != 0 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s != 0 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s != 0 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings() {
        assert_eq!(parse_duration("365d").unwrap(), Duration::days(365));
        assert_eq!(parse_duration("292 days").unwrap(), Duration::days(292));
        assert_eq!(parse_duration("1 day").unwrap(), Duration::days(1));
        assert_eq!(parse_duration("12 hours").unwrap(), Duration::hours(12));
        assert_eq!(parse_duration("24h").unwrap(), Duration::hours(24));
        assert_eq!(parse_duration("8y").unwrap(), Duration::days(2920));
        for bad in [
            "",
            "d",
            "12",
            "12 fortnights",
            "-3d",
            "1.5d",
            "9000000000000000000 days",
            "99999999999999999999 days",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(format_duration(Duration::days(292)), "292d");
        assert_eq!(format_duration(Duration::hours(36)), "36h");
    }
}
