//! The steps' own parameter types. Those that name something of the fixtures, `{signer}` (a
//! signer or a certificate one issues, `fixtures/signers.yaml`) and `{pool}` (a
//! MachineConfigPool, `fixtures/cluster/machineconfigpools.yaml`), match any word, so a
//! misspelt name reaches its step, which fails with the names it knows (`mco-conformance steps`
//! lists them) rather than leaving the step undefined. `{path}` (an absolute path on a node),
//! `{mode}` (an octal file mode, `0644`) and `{duration}` (simulated time: `292 days`,
//! `1 hour`) arrive checked and parsed.

use std::fmt;
use std::str::FromStr;

/// A signer's name, or a target certificate's (`kubelet-client`, `csr-signer`).
#[derive(Debug, Clone, PartialEq, Eq, cucumber::Parameter)]
#[param(name = "signer", regex = r"\S+")]
pub struct SignerName(pub String);

/// A MachineConfigPool's name.
#[derive(Debug, Clone, PartialEq, Eq, cucumber::Parameter)]
#[param(name = "pool", regex = r"\S+")]
pub struct PoolName(pub String);

macro_rules! named {
    ($ty:ident) => {
        impl FromStr for $ty {
            type Err = std::convert::Infallible;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Ok($ty(s.to_string()))
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::ops::Deref for $ty {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }
    };
}

/// An absolute path on a node (`/etc/kubernetes/kubelet-ca.crt`).
#[derive(Debug, Clone, PartialEq, Eq, cucumber::Parameter)]
#[param(name = "path", regex = r"/\S+")]
pub struct NodePath(pub String);

named!(SignerName);
named!(PoolName);
named!(NodePath);

/// An octal file mode as `ls -l` users write it: `0644`, `0600`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, cucumber::Parameter)]
#[param(name = "mode", regex = r"0[0-7]{3}")]
pub struct FileMode(pub u32);

impl FromStr for FileMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.strip_prefix('0').filter(|d| d.len() == 3) {
            Some(digits) => u32::from_str_radix(digits, 8)
                .map(FileMode)
                .map_err(|_| format!("{s:?} is not an octal mode such as 0644")),
            None => Err(format!("{s:?} is not an octal mode such as 0644")),
        }
    }
}

impl fmt::Display for FileMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04o}", self.0)
    }
}

/// A span of simulated time as a feature writes it: a whole number of days, hours, minutes or
/// seconds (`292 days`, `1 hour`, `90 minutes`), kept with the words it was written in.
#[derive(Debug, Clone, PartialEq, Eq, cucumber::Parameter)]
#[param(name = "duration", regex = r"\d+ (?:days?|hours?|minutes?|seconds?)")]
pub struct Span {
    pub written: String,
    pub span: time::Duration,
}

impl FromStr for Span {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let span = harness::pki::parse_duration(s).map_err(|e| format!("{s:?}: {e}"))?;
        Ok(Span {
            written: s.to_string(),
            span,
        })
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_octal_and_spans_keep_their_words() {
        assert_eq!("0644".parse::<FileMode>(), Ok(FileMode(0o644)));
        assert_eq!("0600".parse::<FileMode>().unwrap().to_string(), "0600");
        assert!("0800".parse::<FileMode>().is_err());
        assert!("644".parse::<FileMode>().is_err());
        let span: Span = "292 days".parse().unwrap();
        assert_eq!(
            (span.span, span.to_string()),
            (time::Duration::days(292), "292 days".to_string())
        );
        assert_eq!("1 hour".parse::<Span>().unwrap().span, time::Duration::hours(1));
        let too_big = "99999999999999999999 days".parse::<Span>().unwrap_err();
        assert!(too_big.contains("99999999999999999999 days"), "{too_big}");
    }
}
