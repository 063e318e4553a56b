//! The causes a 422 lists, gathered in order as the rules find them, each worded as
//! apimachinery's `field.Error` words it. Every rule file adds to one; none of them is here.

use crate::error::Cause;
use serde_json::Value;

/// Collects causes in order.
#[derive(Default)]
pub(super) struct Causes(pub Vec<Cause>);

impl Causes {
    pub(super) fn invalid(&mut self, field: &str, value: &str, detail: &str) {
        self.0.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {value:?}: {detail}"),
            field: field.into(),
        });
    }

    /// An invalid value that is not a string, shown as its JSON (`field.ErrorBody`).
    pub(super) fn invalid_json(&mut self, field: &str, value: &Value, detail: &str) {
        self.0.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {value}: {detail}"),
            field: field.into(),
        });
    }

    pub(super) fn too_long(&mut self, field: &str, limit: usize) {
        self.0.push(Cause {
            reason: "FieldValueTooLong",
            message: format!("Too long: may not be more than {limit} bytes"),
            field: field.into(),
        });
    }

    /// `field.Required(path, "")`.
    pub(super) fn required(&mut self, field: &str) {
        self.0.push(Cause {
            reason: "FieldValueRequired",
            message: "Required value".into(),
            field: field.into(),
        });
    }

    /// `field.Forbidden(path, detail)`.
    pub(super) fn forbidden(&mut self, field: &str, detail: &str) {
        self.0.push(Cause {
            reason: "FieldValueForbidden",
            message: format!("Forbidden: {detail}"),
            field: field.into(),
        });
    }
}
