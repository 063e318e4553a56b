//! The step parameters that name something of the fixtures, as cucumber parameter types:
//! `{signer}` (a signer or a certificate one issues, `fixtures/signers.yaml`) and `{pool}` (a
//! MachineConfigPool, `fixtures/cluster/machineconfigpools.yaml`). Each matches any word, so a
//! misspelt name reaches its step, which fails with the names it knows (`mco-conformance steps`
//! lists them) rather than leaving the step undefined.

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

named!(SignerName);
named!(PoolName);
