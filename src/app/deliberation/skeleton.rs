//! TODO(helper): replace this stub.

use super::common::Call;
use crate::app::{Outcome, Rejection};

pub(crate) fn decide_start_skeleton(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_elaboration(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}
