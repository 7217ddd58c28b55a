//! Choosing a protocol module by name from the configuration at load time
//! (`docs/architecture.md`, "Adding a Tonic protocol module").
//!
//! The built-in registry holds the seven modules of [`crate::config::TONIC_MODULES`] plus
//! `homa` (testbench only until the configuration lists it); modules
//! loaded from shared libraries are added with [`Registry::register`]. Each entry records the
//! module's credit scheme and user-state size (what `nicemu modules` lists), read from the
//! module's own [`ModuleConfig`] and checked against Tab. 4 when registered.

use super::engine::{EngineParams, TonicEngine};
use super::module::{CreditScheme, ModuleConfig, TonicModule};
use super::modules::{dcqcn, dctcp, homa, irn, ndp, newreno, reno, sack, ModuleParams};
use super::TonicError;
use crate::config::TonicConfig;

/// Builds a module from parameters.
pub type ModuleFactory = Box<dyn Fn(&ModuleParams) -> Box<dyn TonicModule> + Send + Sync>;

/// What the registry knows about a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleInfo {
    /// Registry name.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// Its credit scheme.
    pub credit_scheme: CreditScheme,
    /// Bytes of per-flow user context it declares.
    pub user_ctx_bytes: u32,
    /// Built into nicemu (else loaded).
    pub builtin: bool,
}

struct Entry {
    info: ModuleInfo,
    factory: ModuleFactory,
}

/// Modules by name.
pub struct Registry {
    entries: Vec<Entry>,
}

/// The built-in modules: name, description, constructor.
type Builtin = (
    &'static str,
    &'static str,
    fn(ModuleParams) -> Box<dyn TonicModule>,
);

const BUILTINS: [Builtin; 8] = [
    (
        "reno",
        "Reno (RFC 5681): cumulative acks, fast retransmit",
        |p| Box::new(reno::Reno::new(p)),
    ),
    (
        "newreno",
        "NewReno (RFC 6582) as in Tonic App. D: partial acks",
        |p| Box::new(newreno::NewReno::new(p)),
    ),
    ("sack", "SACK loss recovery inspired by RFC 6675", |p| {
        Box::new(sack::Sack::new(p))
    }),
    (
        "ndp",
        "NDP: NACKs of trimmed packets, timeouts, pull grants",
        |p| Box::new(ndp::Ndp::new(p)),
    ),
    ("dcqcn", "RoCEv2 go-back-N with DCQCN rate control", |p| {
        Box::new(dcqcn::Dcqcn::new(p))
    }),
    (
        "irn",
        "IRN: RoCE with selective retransmission, BDP window",
        |p| Box::new(irn::Irn::new(p)),
    ),
    (
        "dctcp",
        "DCTCP: NewReno recovery, ECN-fraction window cuts",
        |p| Box::new(dctcp::Dctcp::new(p)),
    ),
    (
        "homa",
        "Homa: RTTbytes unscheduled, then SRPT grants with priorities",
        |p| Box::new(homa::Homa::new(p)),
    ),
];

impl Registry {
    /// An empty registry.
    pub fn empty() -> Self {
        Registry {
            entries: Vec::new(),
        }
    }

    /// The built-in modules (Tonic Tab. 3 plus DCTCP).
    pub fn builtin() -> Self {
        let mut r = Registry::empty();
        for (name, desc, make) in BUILTINS {
            let factory: ModuleFactory = Box::new(move |p| make(*p));
            r.add(name, desc, factory, true)
                .expect("built-in modules are valid");
        }
        r
    }

    fn add(
        &mut self,
        name: &str,
        description: &str,
        factory: ModuleFactory,
        builtin: bool,
    ) -> Result<(), TonicError> {
        if self.info(name).is_some() {
            return Err(TonicError::DuplicateModule(name.to_string()));
        }
        let probe = factory(&ModuleParams::default());
        let cfg: ModuleConfig = probe.config();
        cfg.validate(name)?;
        self.entries.push(Entry {
            info: ModuleInfo {
                name: name.to_string(),
                description: description.to_string(),
                credit_scheme: cfg.credit_scheme,
                user_ctx_bytes: cfg.user_ctx_bytes,
                builtin,
            },
            factory,
        });
        Ok(())
    }

    /// Adds an out-of-tree module (e.g. one loaded through the C ABI). Refused if the name is
    /// taken or its configuration is invalid (user state over the Tab. 4 limit, …).
    pub fn register(
        &mut self,
        name: &str,
        description: &str,
        factory: ModuleFactory,
    ) -> Result<(), TonicError> {
        self.add(name, description, factory, false)
    }

    /// Every module, in registration order.
    pub fn list(&self) -> impl Iterator<Item = &ModuleInfo> {
        self.entries.iter().map(|e| &e.info)
    }

    /// The module named `name`.
    pub fn info(&self, name: &str) -> Option<&ModuleInfo> {
        self.entries
            .iter()
            .find(|e| e.info.name == name)
            .map(|e| &e.info)
    }

    /// A new instance of module `name` with parameters `p`.
    pub fn create(&self, name: &str, p: &ModuleParams) -> Result<Box<dyn TonicModule>, TonicError> {
        let e = self
            .entries
            .iter()
            .find(|e| e.info.name == name)
            .ok_or_else(|| TonicError::UnknownModule {
                name: name.to_string(),
                known: self
                    .list()
                    .map(|i| i.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        Ok((e.factory)(p))
    }

    /// An engine running module `name`, configured from `[tonic]` of the TOML configuration.
    pub fn engine_from_config(&self, cfg: &TonicConfig) -> Result<TonicEngine, TonicError> {
        let name = cfg.module.as_deref().ok_or_else(|| {
            TonicError::InvalidParam("no module configured ([tonic] module = ...)".to_string())
        })?;
        let (mp, ep) = params_from_config(cfg);
        TonicEngine::new(self.create(name, &mp)?, ep)
    }
}

/// Module and engine parameters from `[tonic]`.
pub fn params_from_config(c: &TonicConfig) -> (ModuleParams, EngineParams) {
    let mp = ModuleParams {
        init_wnd: c.init_wnd,
        rto_ns: c.rto_us.saturating_mul(1000),
        dup_ack_thresh: c.dup_ack_thresh,
        line_rate_bps: c.line_rate_mbps.saturating_mul(1_000_000),
        min_rate_bps: c.min_rate_mbps.saturating_mul(1_000_000),
        max_burst_bytes: c.max_burst_bytes,
        init_credit_bytes: c.init_credit_bytes,
        bdp_segments: c.bdp_segments,
        rto_low_ns: c.rto_low_us.saturating_mul(1000),
        ..ModuleParams::default()
    };
    let ep = EngineParams {
        max_flows: c.max_flows,
        window_segments: c.window,
        ring_depth: c.ring_depth,
        ..EngineParams::default()
    };
    (mp, ep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TONIC_MODULES;
    use crate::tonic::module::{HookOutput, IncomingInput, PeriodicInput};

    #[test]
    fn builtin_names_match_the_config_list() {
        let r = Registry::builtin();
        let names: Vec<_> = r.list().map(|i| i.name.clone()).collect();
        // `config::TONIC_MODULES` (what a NIC configuration may name) does not list homa yet:
        // Homa runs in the testbench only so far.
        assert_eq!(names[..TONIC_MODULES.len()], TONIC_MODULES.to_vec());
        assert_eq!(names[TONIC_MODULES.len()..], ["homa"]);
        let schemes: Vec<_> = r.list().map(|i| i.credit_scheme.name()).collect();
        assert_eq!(
            schemes,
            ["wnd", "wnd", "wnd", "token", "rate", "rate", "wnd", "token"],
            "Tab. 3 credit types"
        );
        for i in r.list() {
            assert!(
                i.user_ctx_bytes <= i.credit_scheme.user_ctx_limit(),
                "{i:?}"
            );
            assert_eq!(
                r.create(&i.name, &ModuleParams::default()).unwrap().name(),
                i.name
            );
        }
    }

    struct Fat;
    impl TonicModule for Fat {
        fn name(&self) -> &str {
            "fat"
        }
        fn config(&self) -> ModuleConfig {
            ModuleConfig {
                credit_scheme: CreditScheme::Grant,
                user_ctx_bytes: 257,
                ..Default::default()
            }
        }
        fn incoming(&self, _: &IncomingInput, _: &mut [u64], _: &mut HookOutput) {}
        fn periodic(&self, _: &PeriodicInput, _: &mut [u64], _: &mut HookOutput) {}
    }

    #[test]
    fn refuses_unknown_duplicate_and_oversized_modules() {
        let mut r = Registry::builtin();
        let e = r.create("cubic", &ModuleParams::default()).err().unwrap();
        assert!(e.to_string().contains("newreno"), "{e}");
        let dup: ModuleFactory = Box::new(|p| Box::new(reno::Reno::new(*p)));
        assert_eq!(
            r.register("reno", "again", dup).unwrap_err(),
            TonicError::DuplicateModule("reno".into())
        );
        let fat: ModuleFactory = Box::new(|_| Box::new(Fat));
        let e = r.register("fat", "too big", fat).unwrap_err();
        assert!(
            matches!(e, TonicError::UserCtxTooLarge { limit: 256, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("Table 4"));
    }

    #[test]
    fn engine_from_config_uses_the_named_module() {
        let cfg = TonicConfig {
            module: Some("dcqcn".into()),
            window: 256,
            ..Default::default()
        };
        let e = Registry::builtin().engine_from_config(&cfg).unwrap();
        assert_eq!(e.module().name(), "dcqcn");
        assert_eq!(e.config().credit_scheme, CreditScheme::Rate);
        assert_eq!(e.params().window_segments, 256);
    }
}
