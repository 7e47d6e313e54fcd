//! TODO(helper): replace this stub.

use super::common::Call;
use crate::app::{Outcome, Rejection};

pub(crate) fn decide_start(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_add_node(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_expand(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_template(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_rubric(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_score(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_prune(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_refine(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_pattern(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}
