//! TODO(helper): replace this stub.

use super::common::Call;
use crate::app::{Outcome, Rejection};

pub(crate) fn decide_record_assumption(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_assumption_status(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_verify(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_evaluate(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_checkpoint(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_converge(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_consensus(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}
