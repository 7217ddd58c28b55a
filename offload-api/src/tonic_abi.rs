//! The versioned C ABI through which out-of-tree Tonic protocol modules load from a shared
//! library (issue 4, "Module interface").
