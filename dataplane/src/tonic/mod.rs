//! Tonic's programmable transport engines in software (Tonic, NSDI '20, and
//! `notes/tonic-extraction.md`): the fixed data delivery and credit engines and the protocol
//! modules chosen at load time.
