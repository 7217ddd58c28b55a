//! Property tests of the SYN cookies (AccelTCP §4.1, RFC 4987 §3.6): for any connection, peer
//! ISN, MSS and time, a cookie checks within its age and gives back the MSS class; it fails for
//! any other connection or peer ISN, with any bit of its hash or MSS class changed, and once
//! older than the allowed age; the timestamp encoding of the options round-trips.

use offload_api::syncookie::*;
use proptest::prelude::*;

const SEC: u64 = 1_000_000_000;

fn tuple() -> impl Strategy<Value = CookieTuple> {
    (
        any::<[u8; 4]>(),
        any::<u16>(),
        any::<[u8; 4]>(),
        any::<u16>(),
    )
        .prop_map(
            |(remote_ip, remote_port, local_ip, local_port)| CookieTuple {
                remote_ip,
                remote_port,
                local_ip,
                local_port,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn cookie_checks_within_its_age_and_keeps_the_mss_class(
        c in tuple(),
        isn in any::<u32>(),
        mss in any::<u16>(),
        key in any::<[u8; 16]>(),
        start in 0u64..1_000_000,
        made_after in 0u64..100_000,
        age_ticks in 0u64..=2,
        within in 0u64..64,
    ) {
        let cfg = CookieConfig::default();
        let mut g = SynCookies::new(cfg, key, start * SEC);
        let made = (start + made_after) * SEC;
        let cookie = g.make(&c, isn, mss, made);
        prop_assert_eq!(cookie & 31, ((made / cfg.period_ns) & 31) as u32);
        let expect = MSS_TABLE[mss_class(mss) as usize];
        prop_assert!(expect <= mss.max(536));
        let at = (made / cfg.period_ns + age_ticks) * cfg.period_ns + within * SEC;
        prop_assert_eq!(g.check(&c, cookie, isn, at), Ok(expect));
    }

    #[test]
    fn cookie_fails_for_anything_else(
        c in tuple(),
        other in tuple(),
        isn in any::<u32>(),
        other_isn in any::<u32>(),
        bit in 5u32..32,
        key in any::<[u8; 16]>(),
    ) {
        let now = 10_000 * SEC;
        let mut g = SynCookies::new(CookieConfig::default(), key, now);
        let cookie = g.make(&c, isn, 1460, now);
        if other != c {
            prop_assert!(g.check(&other, cookie, isn, now).is_err());
        }
        if other_isn != isn {
            prop_assert!(g.check(&c, cookie, other_isn, now).is_err());
        }
        // Any bit of the hash or of the MSS class (bits 5-31) changed.
        prop_assert!(g.check(&c, cookie ^ (1 << bit), isn, now).is_err());
        // Past the allowed age.
        let p = g.config().period_ns;
        let late = (now / p + 3) * p;
        prop_assert_eq!(g.check(&c, cookie, isn, late), Err(CookieError::Expired));
    }

    #[test]
    fn timestamp_options_round_trip(
        clock in any::<u32>(),
        ws in proptest::option::of(0u8..=14),
        sack in any::<bool>(),
        nic in any::<bool>(),
        mss in any::<u16>(),
    ) {
        let o = CookieOptions { mss, peer_wscale: ws, sack_permitted: sack };
        let ts = encode_ts(clock, &o, nic);
        prop_assert_eq!(ts >> TS_OPTION_BITS, clock >> TS_OPTION_BITS);
        prop_assert_eq!(ts_is_nic(ts), nic);
        prop_assert_eq!(decode_ts(ts, mss), Some(o));
    }
}
