//! Subcommands of the `thinkledger` binary that are more than a few lines of wiring, one file per
//! concern. Part of the binary, not the library: they may print, read files and exit with codes.
//! They must not hold rules: what they build, check or report comes from the library.

pub mod agent;
pub mod audit;
pub mod backup;
pub mod ledger;
pub mod migrate;
pub mod serve;
pub mod token;
