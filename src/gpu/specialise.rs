//! Robot-specialised collision kernels: CUDA C generated from a loaded [`CollisionModel`], with
//! the robot's constants (joint origins and axes, body and covering-sphere centres and radii,
//! the self-collision pairs, the margin, the sweep reach table) folded into straight-line code,
//! compiled by NVRTC when a [`super::CudaChecker`] is built.
//!
//! # Same arithmetic as the CPU
//!
//! The generated code is not a new algorithm: it is the table-driven twin (`kernels/common.cuh`,
//! itself the twin of `src/collision/cpu.rs`) with the loops over robot tables unrolled. Every
//! floating-point expression is either a call of the same `common.cuh` function the generic kernel
//! calls (`gmp_joint_frame`, `xf_mul`, `xf_apply`, `gmp_near_box`, `gmp_separated`, ...) or the
//! same expression written in the same order, with each robot constant written as a hexadecimal
//! float literal of exactly the f32 the tables hold (see [`f32_literal`]). Nothing is folded here:
//! where two constants meet (say `radius + 0.0 + margin`), the compiler folds them, and IEEE
//! constant folding in round-to-nearest gives the bits the CPU computes at run time. The module
//! is compiled with the same options as the generic one (`--fmad=false`, IEEE division and square
//! root, no flush to zero).
//!
//! What the unrolling may change, and why the verdicts cannot:
//! - The order of the tests. A configuration is free when every (body, obstacle) test and every
//!   self-pair test says so; each test is a pure function of the configuration (the GJK caches
//!   start afresh per test), so their conjunction does not depend on the order the CPU stops at.
//!   The generated code tests the bodies frame by frame, as forward kinematics reaches them, and
//!   each pair once both of its frames are known, leaving at the first collision of a frame.
//! - The covering-sphere loops compute every "near" flag instead of stopping at the first one
//!   (an `any` of pure tests).
//! - A pair of sphere bodies whose one covering sphere *is* the body's bounding sphere (same
//!   centre and radius bits, the sphere model) is tested once: the CPU's second test computes the
//!   same expression on the same values.
//! - Pairs where a body has no covering sphere are never in collision on the CPU (its covering
//!   loop finds nothing near) and are left out.
//!
//! Scene obstacles and the base state stay in device memory (the generic kernel's argument
//! block), so scene updates and new base states need no new module.

use crate::collision::detmath::V3;
use crate::collision::model::{BodyModel, CollisionModel};

/// Most bodies a specialised kernel is generated for.
pub const MAX_BODIES: usize = 4096;
/// Most self-collision pairs a specialised kernel is generated for.
pub const MAX_SELF_PAIRS: usize = 20_000;

/// Why no specialised kernel was generated (the generic kernel runs instead).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecialiseError {
    /// A robot constant is NaN or infinite (it could not be written as a literal).
    #[error("the collision model holds a non-finite constant ({what})")]
    NonFinite {
        /// Which constant.
        what: String,
    },
    /// The model is too large for straight-line code.
    #[error("the collision model is too large to specialise: {what} (limit {limit})")]
    TooLarge {
        /// What was counted.
        what: String,
        /// The limit.
        limit: usize,
    },
    /// The model's tables are inconsistent (an index out of range).
    #[error("the collision model is inconsistent: {0}")]
    Inconsistent(String),
}

/// What a generated kernel contains.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SpecialiseStats {
    /// Planning-group joints.
    pub dof: usize,
    /// Moving frames (forward-kinematics steps).
    pub frames: usize,
    /// Bodies tested against the obstacles.
    pub bodies: usize,
    /// Self-collision pairs tested.
    pub self_pairs: usize,
    /// Self pairs reduced to one sphere-sphere test (sphere bodies).
    pub sphere_pairs: usize,
    /// Self pairs whose bounding test is followed, when it fires, by the out-of-line covering
    /// and exact tests.
    pub fine_pairs: usize,
    /// Self pairs left out: a body without covering spheres is never in contact on the CPU.
    pub skipped_pairs: usize,
    /// Bytes of generated CUDA C (without the shared `common.cuh` and `collision.cu`).
    pub generated_bytes: usize,
}

/// A generated translation unit.
#[derive(Clone, Debug)]
pub struct SpecialisedSource {
    /// The whole translation unit for NVRTC: `common.cuh`, the generated tests, `collision.cu`.
    pub source: String,
    /// The generated part alone.
    pub generated: String,
    /// What it contains.
    pub stats: SpecialiseStats,
}

/// `x` as a C++17 hexadecimal float literal of exactly the same f32 (`0x1.8p-3f`), with a sign
/// and in parentheses when negative; `None` for NaN and infinities. Hexadecimal literals are
/// exact: no decimal rounding can differ between the Rust tables and NVRTC's parser.
pub fn f32_literal(x: f32) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    let bits = x.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    let body = if exp == 0 && man == 0 {
        "0x0p+0".to_string()
    } else if exp == 0 {
        format!("0x0.{:06x}p-126", man << 1)
    } else {
        format!("0x1.{:06x}p{:+}", man << 1, exp - 127)
    };
    Some(if bits >> 31 != 0 {
        format!("(-{body}f)")
    } else {
        format!("{body}f")
    })
}

/// Writes literals, failing on non-finite constants.
struct Lit;

impl Lit {
    fn f(x: f32, what: impl FnOnce() -> String) -> Result<String, SpecialiseError> {
        f32_literal(x).ok_or_else(|| SpecialiseError::NonFinite { what: what() })
    }

    fn v3(v: &V3, what: impl Fn() -> String) -> Result<String, SpecialiseError> {
        Ok(format!(
            "v3({}, {}, {})",
            Self::f(v[0], &what)?,
            Self::f(v[1], &what)?,
            Self::f(v[2], &what)?
        ))
    }
}

/// Indented line output.
struct Out {
    s: String,
    indent: usize,
}

impl Out {
    fn line(&mut self, l: impl AsRef<str>) {
        for _ in 0..self.indent {
            self.s.push_str("    ");
        }
        self.s.push_str(l.as_ref());
        self.s.push('\n');
    }

    fn open(&mut self, l: impl AsRef<str>) {
        self.line(l);
        self.indent += 1;
    }

    fn close(&mut self, l: impl AsRef<str>) {
        self.indent = self.indent.saturating_sub(1);
        self.line(l);
    }

    /// `} else {`-style lines: closes a block and opens the next.
    fn mid(&mut self, l: impl AsRef<str>) {
        self.close(l);
        self.indent += 1;
    }
}

/// The C name of the transform of frame `f` (`-1`: the root, identity).
fn frame_name(f: i32) -> String {
    if f < 0 {
        "FR".into()
    } else {
        format!("F{f}")
    }
}

/// A body's covering spheres, checked against the sphere table.
fn covering<'a>(m: &'a CollisionModel, b: &BodyModel) -> Result<&'a [[f32; 4]], SpecialiseError> {
    let (s, n) = (b.sphere_start as usize, b.sphere_count as usize);
    m.spheres.get(s..s + n).ok_or_else(|| {
        SpecialiseError::Inconsistent(format!(
            "body on link {} names spheres {s}..{} of {}",
            b.link,
            s + n,
            m.spheres.len()
        ))
    })
}

/// True when the body is one sphere whose single covering sphere is its bounding sphere, bit for
/// bit: then the CPU's covering test of a pair of such bodies repeats the bounding test.
fn is_plain_sphere(m: &CollisionModel, b: &BodyModel) -> bool {
    let Ok(cov) = covering(m, b) else {
        return false;
    };
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    b.vert_count == 1
        && cov.len() == 1
        && bits(&cov[0][..3]) == bits(&b.center)
        && cov[0][3].to_bits() == b.radius.to_bits()
}

/// Whether the CPU runs the covering-sphere test of a body against obstacles
/// (`b.inflate == 0.0 && b.sphere_count > 0` in `frames_valid`).
fn env_covering(b: &BodyModel) -> bool {
    b.inflate == 0.0 && b.sphere_count > 0
}

/// Generates the specialised translation unit for `model`.
pub fn generate(model: &CollisionModel) -> Result<SpecialisedSource, SpecialiseError> {
    let m = model;
    let nb = m.bodies.len();
    let nf = m.frames.len();
    if nb > MAX_BODIES {
        return Err(SpecialiseError::TooLarge {
            what: format!("{nb} bodies"),
            limit: MAX_BODIES,
        });
    }
    if m.self_pairs.len() > MAX_SELF_PAIRS {
        return Err(SpecialiseError::TooLarge {
            what: format!("{} self pairs", m.self_pairs.len()),
            limit: MAX_SELF_PAIRS,
        });
    }
    if m.dof() == 0 || m.dof() > super::MAX_DOF {
        return Err(SpecialiseError::TooLarge {
            what: format!("{} planning-group joints", m.dof()),
            limit: super::MAX_DOF,
        });
    }
    if m.reach.len() != nb * nf {
        return Err(SpecialiseError::Inconsistent(format!(
            "reach table has {} entries for {nb} bodies x {nf} frames",
            m.reach.len()
        )));
    }
    for (k, f) in m.frames.iter().enumerate() {
        if f.parent >= k as i32 || f.var as usize >= m.num_vars {
            return Err(SpecialiseError::Inconsistent(format!(
                "frame {k}: parent {} / variable {} of {}",
                f.parent, f.var, m.num_vars
            )));
        }
    }
    for (i, b) in m.bodies.iter().enumerate() {
        if b.frame >= nf as i32 {
            return Err(SpecialiseError::Inconsistent(format!(
                "body {i} on frame {} of {nf}",
                b.frame
            )));
        }
        covering(m, b)?;
    }
    for p in &m.self_pairs {
        if p[0] as usize >= nb || p[1] as usize >= nb {
            return Err(SpecialiseError::Inconsistent(format!(
                "self pair {p:?} of {nb} bodies"
            )));
        }
    }
    let var_group = |var: u32| -> i32 { m.var_group.get(var as usize).copied().unwrap_or(-1) };

    let mut stats = SpecialiseStats {
        dof: m.dof(),
        frames: nf,
        bodies: nb,
        ..Default::default()
    };
    let mg = Lit::f(m.margin, || "margin".into())?;
    let mut o = Out {
        s: String::new(),
        indent: 0,
    };
    o.line("// ---- generated by src/gpu/specialise.rs from the loaded robot: do not edit ----");
    o.line(format!(
        "// {} joints, {nf} moving frames, {nb} bodies, {} self pairs, margin {}",
        m.dof(),
        m.self_pairs.len(),
        m.margin
    ));
    o.line("// Twin of cpu.rs frames_valid after frame_poses (see the module documentation of");
    o.line("// specialise.rs): SWEEP grows every body by its sweep for the motion (diff, n).");
    o.line("template <bool SWEEP>");
    o.open("__device__ __noinline__ bool gmp_spec_valid(const GmpModel& m, const float* q, const float* diff, unsigned n) {");
    o.line("bool hit = false;");
    // Per-joint step of the sweep (body_sweep: diff[k].abs() / segments as f32).
    let mut used_groups: Vec<i32> = m.frames.iter().map(|f| var_group(f.var)).collect();
    used_groups.retain(|&k| k >= 0);
    used_groups.sort_unstable();
    used_groups.dedup();
    if !used_groups.is_empty() {
        let names: Vec<String> = used_groups
            .iter()
            .map(|k| format!("st{k} = 0.0f"))
            .collect();
        o.line(format!("float {};", names.join(", ")));
        o.open("if (SWEEP) {");
        o.line("const float nf = (float)n;");
        for k in &used_groups {
            o.line(format!("st{k} = fabsf(diff[{k}]) / nf;"));
        }
        o.close("}");
    }

    // Bodies grouped by frame: the root's first, then each frame as forward kinematics reaches it.
    let group_of = |b: &BodyModel| (b.frame + 1) as usize;
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); nf + 1];
    for (i, b) in m.bodies.iter().enumerate() {
        groups[group_of(b)].push(i);
    }
    // Each pair is tested with the later of its two bodies' groups.
    let mut pairs_of: Vec<Vec<usize>> = vec![Vec::new(); nf + 1];
    for (pi, p) in m.self_pairs.iter().enumerate() {
        let (a, b) = (&m.bodies[p[0] as usize], &m.bodies[p[1] as usize]);
        pairs_of[group_of(a).max(group_of(b))].push(pi);
    }

    if !groups[0].is_empty() {
        o.line("const Xf FR = xf_identity();");
    }
    for g in 0..=nf {
        if g > 0 {
            emit_frame(&mut o, m, g - 1, &var_group)?;
        }
        if groups[g].is_empty() && pairs_of[g].is_empty() {
            continue;
        }
        emit_bodies(&mut o, m, &groups[g], &var_group)?;
        emit_obstacle_tests(&mut o, m, &groups[g], &mg)?;
        for &pi in &pairs_of[g] {
            emit_pair(&mut o, m, pi, &mg, &mut stats)?;
        }
        o.line("if (hit) return false;");
    }
    o.line("return true;");
    o.close("}");
    o.line("");
    o.line("__device__ __forceinline__ bool gmp_spec_config_valid(const GmpModel& m, const float* q) {");
    o.line("    return gmp_spec_valid<false>(m, q, nullptr, 0u);");
    o.line("}");
    o.line("");
    o.line("// gmp_motion_step_status with the specialised tests.");
    o.line("__device__ __forceinline__ unsigned gmp_spec_step_status(const GmpModel& m, const float* q,");
    o.line(
        "                                                         const float* diff, unsigned n) {",
    );
    o.line("    if (gmp_spec_valid<true>(m, q, diff, n)) return 0u;");
    o.line("    if (!gmp_spec_valid<false>(m, q, nullptr, 0u)) return 1u;");
    o.line("    return 2u;");
    o.line("}");
    o.line("");
    o.line("#define GMP_CONFIG_VALID(m, q) gmp_spec_config_valid(m, q)");
    o.line("#define GMP_STEP_STATUS(m, q, diff, n) gmp_spec_step_status(m, q, diff, n)");
    o.line(format!("#define GMP_DOF(m) {}u", m.dof()));
    o.line("// ---- end of generated code ----");
    stats.self_pairs = m.self_pairs.len();
    let generated = o.s;
    stats.generated_bytes = generated.len();
    let common = super::kernels::COMMON_CUH;
    let collision = super::kernels::COLLISION_CU;
    let mut source = String::with_capacity(common.len() + generated.len() + collision.len() + 96);
    source.push_str("// ---- common.cuh ----\n");
    source.push_str(common);
    source.push('\n');
    source.push_str(&generated);
    source.push_str("// ---- collision.cu ----\n");
    source.push_str(collision);
    Ok(SpecialisedSource {
        source,
        generated,
        stats,
    })
}

/// Forward kinematics of frame `k` (twin of one step of `gmp_fk` / `frame_poses`).
fn emit_frame(
    o: &mut Out,
    m: &CollisionModel,
    k: usize,
    var_group: &impl Fn(u32) -> i32,
) -> Result<(), SpecialiseError> {
    let f = &m.frames[k];
    let what = || format!("frame {k}");
    let src = match var_group(f.var) {
        g if g >= 0 => format!("q[{g}]"),
        _ => format!("m.base_state[{}]", f.var),
    };
    o.line(format!(
        "// frame {k}: {} joint on variable {}, parent {}",
        if f.kind == 0 { "revolute" } else { "prismatic" },
        f.var,
        f.parent
    ));
    o.line(format!("Xf {};", frame_name(k as i32)));
    o.open("{");
    o.line(format!(
        "const float qv = {} * {src} + {};",
        Lit::f(f.mult, what)?,
        Lit::f(f.offset, what)?
    ));
    o.line("Xf org;");
    for (i, v) in f.origin.r.iter().enumerate() {
        o.line(format!("org.r[{i}] = {};", Lit::f(*v, what)?));
    }
    for (i, v) in f.origin.t.iter().enumerate() {
        o.line(format!("org.t[{i}] = {};", Lit::f(*v, what)?));
    }
    o.line(format!(
        "const float ax[3] = {{{}, {}, {}}};",
        Lit::f(f.axis[0], what)?,
        Lit::f(f.axis[1], what)?,
        Lit::f(f.axis[2], what)?
    ));
    o.line(format!(
        "const Xf jf = gmp_joint_frame(org, ax, {}u, qv);",
        f.kind
    ));
    if f.parent < 0 {
        o.line(format!("{} = jf;", frame_name(k as i32)));
    } else {
        o.line(format!(
            "{} = xf_mul({}, jf);",
            frame_name(k as i32),
            frame_name(f.parent)
        ));
    }
    o.close("}");
    Ok(())
}

/// World centres (`c<b>`) and sweeps (`e<b>`, twin of `body_sweep`) of a group's bodies.
fn emit_bodies(
    o: &mut Out,
    m: &CollisionModel,
    bodies: &[usize],
    var_group: &impl Fn(u32) -> i32,
) -> Result<(), SpecialiseError> {
    let nf = m.frames.len();
    for &bi in bodies {
        let b = &m.bodies[bi];
        o.line(format!(
            "// body {bi} (link {}, {} vertices, {} covering spheres)",
            b.link, b.vert_count, b.sphere_count
        ));
        o.line(format!(
            "const V3 c{bi} = xf_apply({}, {});",
            frame_name(b.frame),
            Lit::v3(&b.center, || format!("body {bi} centre"))?
        ));
        o.line(format!("float e{bi} = 0.0f;"));
        let mut terms = Vec::new();
        for (f, fr) in m.frames.iter().enumerate() {
            let k = var_group(fr.var);
            if k < 0 {
                continue;
            }
            let reach = m.reach[bi * nf + f];
            terms.push(format!(
                "a = a + {} * st{k} * {};",
                Lit::f(fr.mult.abs(), || format!("frame {f} multiplier"))?,
                Lit::f(reach, || format!("reach of body {bi}"))?
            ));
        }
        o.open("if (SWEEP) {");
        o.line("float a = 0.0f;");
        for t in terms {
            o.line(t);
        }
        o.line(format!("e{bi} = 0.5f * a;"));
        o.close("}");
    }
    Ok(())
}

/// The group's bodies against every obstacle slot (twin of the obstacle loop of `frames_valid`):
/// one pass over the obstacles, each slot's kind dispatched once for all the group's bodies.
fn emit_obstacle_tests(
    o: &mut Out,
    m: &CollisionModel,
    bodies: &[usize],
    mg: &str,
) -> Result<(), SpecialiseError> {
    if bodies.is_empty() {
        return Ok(());
    }
    let radius = |bi: usize| -> Result<String, SpecialiseError> {
        Lit::f(m.bodies[bi].radius, || format!("body {bi} radius"))
    };
    o.open("for (unsigned oi = 0; oi < m.num_obstacles; oi++) {");
    o.line("const GmpObstacle o = m.obstacles[oi];");
    o.line("if (o.kind == GMP_NONE) continue;");
    let flags: Vec<String> = bodies.iter().map(|b| format!("n{b} = false")).collect();
    o.line(format!("bool {};", flags.join(", ")));
    for (k, (cond, func)) in [
        ("o.kind == GMP_BOX", "gmp_near_box"),
        ("o.kind == GMP_CYLINDER", "gmp_near_cylinder"),
        (
            "o.kind == GMP_SPHERE || o.kind == GMP_MESH",
            "gmp_near_ball",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        if k == 0 {
            o.open(format!("if ({cond}) {{"));
        } else {
            o.mid(format!("}} else if ({cond}) {{"));
        }
        for &bi in bodies {
            o.line(format!(
                "n{bi} = {func}(c{bi}, {} + e{bi}, o, {mg});",
                radius(bi)?
            ));
        }
    }
    o.close("}");
    // Sphere bodies without a covering test against a primitive: the distance test was exact.
    let (points, general): (Vec<usize>, Vec<usize>) = bodies
        .iter()
        .partition(|&&bi| m.bodies[bi].vert_count == 1 && !env_covering(&m.bodies[bi]));
    if !points.is_empty() {
        let any: Vec<String> = points.iter().map(|b| format!("n{b}")).collect();
        o.open("if (o.kind != GMP_MESH) {");
        o.line(format!("hit |= {};", any.join(" | ")));
        o.mid("} else {");
        for &bi in &points {
            emit_env_fine(o, m, bi);
        }
        o.close("}");
    }
    for &bi in &general {
        emit_env_fine(o, m, bi);
    }
    o.close("}");
    Ok(())
}

/// The rest of a (body, obstacle) test once its bounding test fired: covering spheres and the
/// exact test, out of line and table-driven (`gmp_body_obstacle_clear` of the generic kernel).
fn emit_env_fine(o: &mut Out, m: &CollisionModel, bi: usize) {
    o.line(format!(
        "if (n{bi} && (hit || !gmp_body_obstacle_clear_at(m, {}, {bi}u, oi, c{bi}, e{bi}))) return false;",
        frame_name(m.bodies[bi].frame)
    ));
}

/// Self pair `pi` (twin of the pair loop of `frames_valid`).
fn emit_pair(
    o: &mut Out,
    m: &CollisionModel,
    pi: usize,
    mg: &str,
    stats: &mut SpecialiseStats,
) -> Result<(), SpecialiseError> {
    let [ia, ib] = m.self_pairs[pi];
    let (ia, ib) = (ia as usize, ib as usize);
    let (ba, bb) = (&m.bodies[ia], &m.bodies[ib]);
    let (sa, sb) = (covering(m, ba)?, covering(m, bb)?);
    if sa.is_empty() || sb.is_empty() {
        // The CPU's covering loop finds nothing near: never a collision.
        stats.skipped_pairs += 1;
        return Ok(());
    }
    let ra = Lit::f(ba.radius, || format!("body {ia} radius"))?;
    let rb = Lit::f(bb.radius, || format!("body {ib} radius"))?;
    o.open(format!("{{ // pair {pi}: bodies {ia}, {ib}"));
    o.line(format!("const V3 d = gmp_sub(c{ia}, c{ib});"));
    o.line(format!(
        "const float rr = {ra} + {rb} + {mg} + e{ia} + e{ib};"
    ));
    if is_plain_sphere(m, ba) && is_plain_sphere(m, bb) {
        // Not farther than rr, then the identical covering test, then a collision.
        stats.sphere_pairs += 1;
        o.line("hit |= gmp_dot(d, d) <= rr * rr;");
        o.close("}");
        return Ok(());
    }
    o.line(format!(
        "if (!(gmp_dot(d, d) > rr * rr) && (hit || !gmp_pair_clear_at(m, {}, {}, {ia}u, {ib}u, e{ia}, e{ib}, d))) return false;",
        frame_name(ba.frame),
        frame_name(bb.frame)
    ));
    stats.fine_pairs += 1;
    o.close("}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses what [`f32_literal`] writes back to an f32 (exactly).
    fn parse(lit: &str) -> f32 {
        let s = lit.trim_start_matches('(').trim_end_matches(')');
        let (neg, s) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let s = s.strip_prefix("0x").unwrap().strip_suffix('f').unwrap();
        let (mant, exp) = s.split_once('p').unwrap();
        let exp: i32 = exp.parse().unwrap();
        let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
        let mut v = int.parse::<u64>().unwrap() as f64;
        for (i, c) in frac.chars().enumerate() {
            v += c.to_digit(16).unwrap() as f64 / 16f64.powi(i as i32 + 1);
        }
        let v = (v * 2f64.powi(exp)) as f32;
        if neg {
            -v
        } else {
            v
        }
    }

    #[test]
    fn literals_are_exact() {
        let mut vals = vec![
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            0.1,
            1e-4,
            std::f32::consts::PI,
            f32::MAX,
            f32::MIN_POSITIVE,
            f32::MIN_POSITIVE / 3.0,
            -1.0e-42,
            0.333,
            1.5703125,
        ];
        let mut x = 0x1234_5678u32;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let v = f32::from_bits(x);
            if v.is_finite() {
                vals.push(v);
            }
        }
        for v in vals {
            let l = f32_literal(v).unwrap();
            assert_eq!(parse(&l).to_bits(), v.to_bits(), "{v:e} -> {l}");
        }
        assert_eq!(f32_literal(1.0).unwrap(), "0x1.000000p+0f");
        assert_eq!(f32_literal(-0.0).unwrap(), "(-0x0p+0f)");
        assert!(f32_literal(f32::NAN).is_none());
        assert!(f32_literal(f32::INFINITY).is_none());
    }
}
