//! The `sett._sett` extension module: pyo3 classes over the `sett` crate. The
//! Python package `sett` (python/sett/__init__.py) adds context managers and
//! helpers on top.
//!
//! The GIL is released around work that can block or take long (writes, which
//! may fsync or stall; batches; multi-get; GC; backup; flatten; iteration
//! chunks; close), and kept for a single point read: releasing it costs more
//! than a read from memory, and while another Python thread is busy a thread
//! that released the GIL waits for the interpreter's switch interval to get
//! it back (bench/calls.py and a busy-thread test: a get took 0.8 µs holding
//! the GIL and 4.3 µs releasing it; a put, which releases it, 11.9 µs against
//! 2.3 µs in a build that held it).

mod batch;
mod convert;
mod db;
mod errors;
mod extra;
mod feed;
mod iter;
mod keyspace;
mod store;
mod stream;
mod txn;

use pyo3::prelude::*;

#[pymodule]
fn _sett(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("OPTIONS", db::options_table(m.py())?)?;
    m.add_class::<store::Store>()?;
    m.add_class::<db::Db>()?;
    m.add_class::<batch::Batch>()?;
    m.add_class::<extra::Sequence>()?;
    m.add_class::<extra::BulkLoader>()?;
    m.add_class::<txn::Txn>()?;
    m.add_class::<keyspace::Keyspace>()?;
    m.add_class::<iter::PyIter>()?;
    m.add_class::<feed::Subscription>()?;
    m.add_class::<feed::Change>()?;
    errors::register(m)?;
    Ok(())
}
