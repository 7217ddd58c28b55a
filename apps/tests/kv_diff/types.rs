//! The differential stream's commands over hashes, sets, sorted sets, list edits, string
//! ranges, key renames and copies, databases and transactions (MULTI/EXEC/WATCH), valid
//! and wrong (wrong types, bad numbers, bad options, wrong arity).

use super::{Gen, Generated};

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// Exact binary fractions: sums of them print the same from Redis's `long double` and
/// nicemu's `f64` (see docs/redis-compat.md).
const FLOAT_INCRS: &[&str] = &[
    "0.5", "1.25", "-3", "10", "2.5e3", "-0.125", "abc", "inf", "1e5000", "",
];
const SCORES: &[&str] = &[
    "0", "1", "2", "-1", "1.5", "2.5", "-inf", "+inf", "inf", "10", "3e2", "0.1", "x", "nan",
];
const SCORE_BOUNDS: &[&str] = &[
    "-inf", "+inf", "(1", "1", "(1.5", "2", "0", "abc", "(", "", "nan", "10",
];
const LEX_BOUNDS: &[&str] = &["-", "+", "[a", "(a", "[c", "(e", "a", "[", "(", "[zz"];
const INDEXES: &[&str] = &["0", "-1", "1", "2", "5", "-10", "x", "-2", "100"];

impl Gen {
    fn pick_s(&mut self, v: &[&str]) -> Vec<u8> {
        b(self.rng.pick(v))
    }

    /// A key of the given family now and then replaced by any key (wrong types).
    fn typed_key(&mut self, names: &[&str]) -> Vec<u8> {
        if self.rng.chance(15) {
            self.key()
        } else {
            self.pick_s(names)
        }
    }

    fn hkey(&mut self) -> Vec<u8> {
        self.typed_key(&["hash", "hash2"])
    }

    fn skey(&mut self) -> Vec<u8> {
        self.typed_key(&["set", "set2", "set3"])
    }

    fn zkey(&mut self) -> Vec<u8> {
        self.typed_key(&["zset", "zset2"])
    }

    fn lkey(&mut self) -> Vec<u8> {
        self.typed_key(&["list", "list2"])
    }

    fn field(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0 => b"f\x00bin".to_vec(),
            1 => vec![b'F'; 70],
            _ => format!("f{}", self.rng.below(6)).into_bytes(),
        }
    }

    fn member(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0..=2 => self.pick_s(&["1", "2", "10", "-5", "007"]),
            3 => vec![b'm'; 80],
            _ => format!("m{}", self.rng.below(8)).into_bytes(),
        }
    }

    fn zmember(&mut self) -> Vec<u8> {
        let m = self
            .rng
            .pick(&["a", "b", "c", "d", "e", "f", "g", "zz", "a\x00"]);
        b(m)
    }

    fn elem(&mut self) -> Vec<u8> {
        if self.rng.chance(20) {
            self.value()
        } else {
            self.pick_s(&["a", "b", "c", "1"])
        }
    }

    fn some<F: FnMut(&mut Gen) -> Vec<u8>>(
        &mut self,
        head: Vec<Vec<u8>>,
        max: u64,
        mut f: F,
    ) -> Vec<Vec<u8>> {
        let mut v = head;
        for _ in 0..1 + self.rng.below(max) {
            v.push(f(self));
        }
        v
    }

    /// One command of the families above.
    pub(super) fn typed_command(&mut self) -> Generated {
        let mut unordered = None;
        // The transaction commands (whose state the generator follows) and the random picks
        // keep their arity.
        let mut fixed = false;
        let which = self.rng.below(70);
        let mut a: Vec<Vec<u8>> = match which {
            // Hashes.
            0..=3 => {
                let c = self.rng.pick(&["hset", "hset", "hmset"]);
                let head = vec![self.name(c), self.hkey()];
                let mut v = head;
                for _ in 0..1 + self.rng.below(3) {
                    v.push(self.field());
                    v.push(self.value());
                }
                v
            }
            4 => vec![self.name("hsetnx"), self.hkey(), self.field(), self.value()],
            5 | 6 => {
                let c = self.rng.pick(&["hget", "hexists", "hstrlen"]);
                vec![self.name(c), self.hkey(), self.field()]
            }
            7 => {
                let h = vec![self.name("hmget"), self.hkey()];
                self.some(h, 4, Gen::field)
            }
            8 => {
                let h = vec![self.name("hdel"), self.hkey()];
                self.some(h, 3, Gen::field)
            }
            9 => {
                let c = self.rng.pick(&["hgetall", "hkeys", "hvals", "hlen"]);
                unordered = match c {
                    "hgetall" => Some(2),
                    "hlen" => None,
                    _ => Some(1),
                };
                vec![self.name(c), self.hkey()]
            }
            10 => {
                let by = self.int_str().into_bytes();
                vec![self.name("hincrby"), self.hkey(), self.field(), by]
            }
            11 => {
                let by = self.pick_s(FLOAT_INCRS);
                let k = self.pick_s(&["hash", "hash", "list"]);
                vec![self.name("hincrbyfloat"), k, b("ff"), by]
            }
            // Sets.
            12..=14 => {
                let h = vec![self.name("sadd"), self.skey()];
                self.some(h, 4, Gen::member)
            }
            15 => {
                let h = vec![self.name("srem"), self.skey()];
                self.some(h, 3, Gen::member)
            }
            16 => {
                let c = self.rng.pick(&["sismember", "scard", "smembers"]);
                let mut v = vec![self.name(c), self.skey()];
                match c {
                    "sismember" => v.push(self.member()),
                    "smembers" => unordered = Some(1),
                    _ => {}
                }
                v
            }
            17 => {
                let h = vec![self.name("smismember"), self.skey()];
                self.some(h, 4, Gen::member)
            }
            18 => {
                // Deterministic forms only: all members, none, or errors.
                let (c, counts): (&str, &[&str]) = if self.rng.chance(50) {
                    ("spop", &["100", "0", "-1", "x"])
                } else {
                    ("srandmember", &["100", "0", "x", "-9223372036854775808"])
                };
                let n = self.pick_s(counts);
                unordered = Some(1);
                fixed = true; // without the count, the pick is random
                vec![self.name(c), self.skey(), n]
            }
            19 => {
                let (s, d) = (self.skey(), self.skey());
                vec![self.name("smove"), s, d, self.member()]
            }
            20 | 21 => {
                let c = self.rng.pick(&[
                    "sinter",
                    "sunion",
                    "sdiff",
                    "sinterstore",
                    "sunionstore",
                    "sdiffstore",
                ]);
                let mut v = vec![self.name(c)];
                if c.ends_with("store") {
                    v.push(self.skey());
                } else {
                    unordered = Some(1);
                }
                self.some(v, 3, Gen::skey)
            }
            // Sorted sets.
            22..=24 => {
                let mut v = vec![self.name("zadd"), self.zkey()];
                for _ in 0..self.rng.below(3) {
                    v.push(self.pick_s(&["NX", "XX", "GT", "LT", "CH", "INCR", "ch"]));
                }
                for _ in 0..1 + self.rng.below(3) {
                    v.push(self.pick_s(SCORES));
                    v.push(self.zmember());
                }
                v
            }
            25 => {
                let by = self.pick_s(SCORES);
                vec![self.name("zincrby"), self.zkey(), by, self.zmember()]
            }
            26 | 27 => {
                let c = self.rng.pick(&["zscore", "zrank", "zrevrank", "zcard"]);
                let mut v = vec![self.name(c), self.zkey()];
                if c != "zcard" {
                    v.push(self.zmember());
                }
                v
            }
            28 => {
                let h = vec![self.name("zmscore"), self.zkey()];
                self.some(h, 3, Gen::zmember)
            }
            29 => {
                let h = vec![self.name("zrem"), self.zkey()];
                self.some(h, 2, Gen::zmember)
            }
            30 | 31 => {
                let (c, bounds) = match self.rng.below(4) {
                    0 => ("zcount", SCORE_BOUNDS),
                    1 => ("zlexcount", LEX_BOUNDS),
                    2 => ("zremrangebyscore", SCORE_BOUNDS),
                    _ => ("zremrangebylex", LEX_BOUNDS),
                };
                let (lo, hi) = (self.pick_s(bounds), self.pick_s(bounds));
                vec![self.name(c), self.zkey(), lo, hi]
            }
            32 => {
                let (lo, hi) = (self.pick_s(INDEXES), self.pick_s(INDEXES));
                vec![self.name("zremrangebyrank"), self.zkey(), lo, hi]
            }
            33..=36 => self.zrange(),
            37 => {
                let c = self.rng.pick(&["zpopmin", "zpopmax"]);
                let mut v = vec![self.name(c), self.zkey()];
                if self.rng.chance(60) {
                    v.push(self.pick_s(&["1", "2", "0", "-1", "x", "10"]));
                }
                v
            }
            // List edits.
            38 => vec![self.name("lindex"), self.lkey(), self.pick_s(INDEXES)],
            39 => vec![
                self.name("lset"),
                self.lkey(),
                self.pick_s(INDEXES),
                self.elem(),
            ],
            40 => {
                let (s, t) = (self.pick_s(INDEXES), self.pick_s(INDEXES));
                vec![self.name("ltrim"), self.lkey(), s, t]
            }
            41 => {
                let n = self.pick_s(&["0", "1", "-1", "2", "x"]);
                vec![self.name("lrem"), self.lkey(), n, self.elem()]
            }
            42 => {
                let w = self.pick_s(&["BEFORE", "after", "middle"]);
                vec![
                    self.name("linsert"),
                    self.lkey(),
                    w,
                    self.elem(),
                    self.elem(),
                ]
            }
            43 => {
                let mut v = vec![self.name("lpos"), self.lkey(), self.elem()];
                for _ in 0..self.rng.below(3) {
                    let o = self.pick_s(&["RANK", "COUNT", "MAXLEN", "bogus"]);
                    v.push(o);
                    v.push(self.pick_s(&["1", "2", "-1", "0", "x", "-9223372036854775808"]));
                }
                v
            }
            44 => {
                let (s, d) = (self.lkey(), self.lkey());
                if self.rng.chance(30) {
                    vec![self.name("rpoplpush"), s, d]
                } else {
                    let (f, t) = (
                        self.pick_s(&["LEFT", "right", "up"]),
                        self.pick_s(&["left", "RIGHT"]),
                    );
                    vec![self.name("lmove"), s, d, f, t]
                }
            }
            45 => {
                let c = self.rng.pick(&["lpushx", "rpushx"]);
                let h = vec![self.name(c), self.lkey()];
                self.some(h, 2, Gen::elem)
            }
            // Strings.
            46 => {
                let c = self.rng.pick(&["getrange", "substr"]);
                let (s, t) = (self.pick_s(INDEXES), self.pick_s(INDEXES));
                vec![self.name(c), self.key(), s, t]
            }
            47 => {
                let off = self.pick_s(&["0", "3", "10", "-1", "x", "100"]);
                let v = self.pick_s(&["", "ab", "xyz\x00"]);
                vec![self.name("setrange"), self.key(), off, v]
            }
            48 => {
                // Not a key that may hold a 19-digit integer: Redis adds those in `long
                // double`, exact where `f64` is not.
                let k = self.pick_s(&["float", "float", "hash", "set"]);
                vec![self.name("incrbyfloat"), k, self.pick_s(FLOAT_INCRS)]
            }
            49 => {
                let mut v = vec![self.name("getex"), self.key()];
                match self.rng.below(7) {
                    0 => v.extend([b("EX"), b("100000")]),
                    1 => v.extend([b("PX"), b("100000000")]),
                    2 => v.push(b("PERSIST")),
                    3 => v.extend([b("EXAT"), b("1")]),
                    4 => v.extend([b("EX"), b("0")]),
                    5 => v.extend([b("PERSIST"), b("EX"), b("5")]),
                    _ => {}
                }
                v
            }
            // Keys and databases.
            50 | 51 => {
                let c = self.rng.pick(&["rename", "renamenx"]);
                vec![self.name(c), self.key(), self.key()]
            }
            52 => {
                let mut v = vec![self.name("copy"), self.key(), self.key()];
                match self.rng.below(5) {
                    0 => v.push(b("REPLACE")),
                    1 => v.extend([b("DB"), self.pick_s(&["1", "0", "99", "x"])]),
                    2 => v.push(b("bogus")),
                    _ => {}
                }
                v
            }
            53 => {
                let c = self.rng.pick(&["touch", "unlink"]);
                let h = vec![self.name(c)];
                self.some(h, 3, Gen::key)
            }
            54 => {
                unordered = Some(1);
                let p = self.pick_s(&["*", "k*", "*a*", "h?sh", "[ks]*", "list"]);
                vec![self.name("keys"), p]
            }
            55 => match self.rng.below(3) {
                0 => vec![
                    self.name("swapdb"),
                    self.pick_s(&["0", "1", "x"]),
                    self.pick_s(&["1", "0", "16"]),
                ],
                1 => vec![self.name("flushdb")],
                _ => vec![self.name("select"), self.pick_s(&["0", "1", "0", "0"])],
            },
            // Transactions (on this connection: its own writes break its WATCH).
            56..=59 => {
                fixed = true;
                match self.rng.below(8) {
                    0 | 1 => {
                        self.multi = true;
                        vec![self.name("multi")]
                    }
                    2 | 3 => {
                        self.multi = false;
                        vec![self.name("exec")]
                    }
                    4 => {
                        self.multi = false;
                        vec![self.name("discard")]
                    }
                    5 | 6 => {
                        let h = vec![self.name("watch")];
                        self.some(h, 2, Gen::key)
                    }
                    _ => vec![self.name("unwatch")],
                }
            }
            60..=63 => vec![
                self.name("type"),
                self.typed_key(&["hash", "set", "zset", "list"]),
            ],
            _ => vec![
                self.name("exists"),
                self.typed_key(&["hash", "set", "zset", "float"]),
            ],
        };
        // Wrong arity now and then.
        if !fixed && a.len() > 2 && self.rng.chance(3) {
            a.pop();
        } else if !fixed && self.rng.chance(2) {
            a.push(b("extra"));
        }
        Generated {
            args: a,
            tolerance: None,
            unordered,
        }
    }

    /// ZRANGE and its older forms with options.
    fn zrange(&mut self) -> Vec<Vec<u8>> {
        let c = self.rng.pick(&[
            "zrange",
            "zrange",
            "zrevrange",
            "zrangebyscore",
            "zrevrangebyscore",
            "zrangebylex",
            "zrevrangebylex",
        ]);
        let mut opts = Vec::new();
        for _ in 0..self.rng.below(3) {
            match self.rng.below(7) {
                0 => opts.push(b("BYSCORE")),
                1 => opts.push(b("BYLEX")),
                2 => opts.push(b("REV")),
                3 | 4 => opts.push(b("WITHSCORES")),
                _ => {
                    opts.push(b("LIMIT"));
                    opts.push(self.pick_s(&["0", "1", "-1", "x"]));
                    opts.push(self.pick_s(&["2", "-1", "0", "1"]));
                }
            }
        }
        let lex = c.ends_with("lex") || opts.iter().any(|o| o == b"BYLEX");
        let score = c.ends_with("score") || opts.iter().any(|o| o == b"BYSCORE");
        let bounds = if lex {
            LEX_BOUNDS
        } else if score {
            SCORE_BOUNDS
        } else {
            INDEXES
        };
        let (lo, hi) = (self.pick_s(bounds), self.pick_s(bounds));
        let mut v = vec![self.name(c), self.zkey(), lo, hi];
        v.extend(opts);
        v
    }
}
