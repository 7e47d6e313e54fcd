//! Derived indexes: structures built from the log to answer queries fast, never the truth. Each
//! can be dropped and rebuilt by replaying the events that fed it; nothing here is read back as
//! a fact. Today: [`memory`], the hybrid (full-text + vector) retrieval index of the memory
//! family. tantivy is confined to this module (a tidy rule).

pub mod memory;
