// gpu_motion_planner: the device twin of src/collision/detmath.rs, src/collision/gjk.rs and the
// per-configuration logic of src/collision/cpu.rs. Every function below performs the same f32
// operations (f64 in the GJK stall recovery) in the same order as its Rust twin (named in the
// comment above it), with the same literals, so that verdicts agree bit for bit. Build with
// --fmad=false --prec-div=true --prec-sqrt=true --ftz=false and never with fast math: only
// + - * /, sqrtf and floorf are used, all correctly rounded on both sides. Do not "simplify" an expression here without changing the
// Rust twin in the same way.
#pragma once

// Largest moving-frame count a model may have (checked on the host).
#ifndef GMP_MAX_FRAMES
#define GMP_MAX_FRAMES 32
#endif
// Largest planning-group joint count (checked on the host).
#ifndef GMP_MAX_DOF
#define GMP_MAX_DOF 32
#endif

// Obstacle kinds (model.rs, obstacle_kind).
#define GMP_BOX 0u
#define GMP_SPHERE 1u
#define GMP_CYLINDER 2u
#define GMP_MESH 3u
#define GMP_NONE 255u

// Most GJK iterations (gjk.rs, MAX_ITERATIONS).
#define GMP_MAX_ITERATIONS 48

// ---- Flat model records (layouts written by src/gpu/upload.rs; all fields 4 bytes) ----

// model.rs KinFrame.
struct GmpFrame {
    int parent;
    unsigned kind;
    unsigned var;
    float mult;
    float offset;
    float axis[3];
    float r[9];
    float t[3];
};

// model.rs BodyModel.
struct GmpBody {
    int frame;
    unsigned link;
    unsigned vert_start;
    unsigned vert_count;
    unsigned sphere_start;
    unsigned sphere_count;
    float center[3];
    float radius;
    float inflate;
};

// model.rs ObstacleModel. 16-byte aligned and padded to 96 bytes (upload.rs OBSTACLE_WORDS), so
// that a record's fields load 16 bytes at a time.
struct alignas(16) GmpObstacle {
    unsigned kind;
    float r[9];
    float t[3];
    float params[3];
    float center[3];
    float radius;
    unsigned mesh_start;
    unsigned mesh_count;
    unsigned pad[2];
};

// Device pointers and counts of the resident robot and scene (src/gpu/upload.rs, DeviceModel).
struct GmpModel {
    const GmpFrame* frames;
    const GmpBody* bodies;
    const float* verts;          // 3 per vertex
    const unsigned* edge_offsets;
    const unsigned* edge_targets;
    const float* spheres;        // 4 per sphere
    const unsigned* self_pairs;  // 2 per pair
    const float* base_state;     // num_vars
    const int* var_group;        // num_vars: group index of the variable, or -1
    const GmpObstacle* obstacles;
    const float* mesh_verts;
    const unsigned* mesh_edge_offsets;
    const unsigned* mesh_edge_targets;
    const float* reach;          // num_bodies x num_frames (model.rs CollisionModel::reach)
    unsigned num_frames;
    unsigned num_bodies;
    unsigned num_self_pairs;
    unsigned num_obstacles;
    unsigned dof;
    float margin;
    // The proximity grid of the scene (src/collision/prox.rs; null: none): per cell, a bit per
    // obstacle record (the first 32) that may be within the grid's reach of the cell.
    const unsigned* prox;
    float prox_lo[3];            // the corner of cell (0, 0, 0)
    float prox_inv_h;            // cells per metre
    unsigned prox_dim[3];        // cells along x, y, z (x fastest)
    unsigned prox_always;        // bits set in every answer
};

// ---- detmath.rs ----

struct Xf {
    float r[9];
    float t[3];
};

struct V3 {
    float x[3];
};

__device__ __forceinline__ V3 v3(float a, float b, float c) {
    V3 v;
    v.x[0] = a;
    v.x[1] = b;
    v.x[2] = c;
    return v;
}

__device__ __forceinline__ Xf xf_identity() {
    Xf o;
    o.r[0] = 1.0f; o.r[1] = 0.0f; o.r[2] = 0.0f;
    o.r[3] = 0.0f; o.r[4] = 1.0f; o.r[5] = 0.0f;
    o.r[6] = 0.0f; o.r[7] = 0.0f; o.r[8] = 1.0f;
    o.t[0] = 0.0f; o.t[1] = 0.0f; o.t[2] = 0.0f;
    return o;
}

// Xf::apply
__device__ __forceinline__ V3 xf_apply(const Xf& a, const V3& p) {
    const float* r = a.r;
    return v3(r[0] * p.x[0] + r[1] * p.x[1] + r[2] * p.x[2] + a.t[0],
              r[3] * p.x[0] + r[4] * p.x[1] + r[5] * p.x[2] + a.t[1],
              r[6] * p.x[0] + r[7] * p.x[1] + r[8] * p.x[2] + a.t[2]);
}

// Xf::rotate_inv
__device__ __forceinline__ V3 xf_rotate_inv(const Xf& a, const V3& v) {
    const float* r = a.r;
    return v3(r[0] * v.x[0] + r[3] * v.x[1] + r[6] * v.x[2],
              r[1] * v.x[0] + r[4] * v.x[1] + r[7] * v.x[2],
              r[2] * v.x[0] + r[5] * v.x[1] + r[8] * v.x[2]);
}

// Xf::apply_inv
__device__ __forceinline__ V3 xf_apply_inv(const Xf& a, const V3& p) {
    V3 d = v3(p.x[0] - a.t[0], p.x[1] - a.t[1], p.x[2] - a.t[2]);
    return xf_rotate_inv(a, d);
}

// Xf::mul
__device__ __forceinline__ Xf xf_mul(const Xf& a, const Xf& b) {
    Xf o;
#pragma unroll
    for (int i = 0; i < 3; i++) {
#pragma unroll
        for (int j = 0; j < 3; j++) {
            o.r[i * 3 + j] = a.r[i * 3] * b.r[j] + a.r[i * 3 + 1] * b.r[3 + j] + a.r[i * 3 + 2] * b.r[6 + j];
        }
    }
    V3 bt = v3(b.t[0], b.t[1], b.t[2]);
    V3 t = xf_apply(a, bt);
    o.t[0] = t.x[0];
    o.t[1] = t.x[1];
    o.t[2] = t.x[2];
    return o;
}

// dot
__device__ __forceinline__ float gmp_dot(const V3& a, const V3& b) {
    return a.x[0] * b.x[0] + a.x[1] * b.x[1] + a.x[2] * b.x[2];
}

// sub
__device__ __forceinline__ V3 gmp_sub(const V3& a, const V3& b) {
    return v3(a.x[0] - b.x[0], a.x[1] - b.x[1], a.x[2] - b.x[2]);
}

// add
__device__ __forceinline__ V3 gmp_add(const V3& a, const V3& b) {
    return v3(a.x[0] + b.x[0], a.x[1] + b.x[1], a.x[2] + b.x[2]);
}

// scale
__device__ __forceinline__ V3 gmp_scale(const V3& a, float s) {
    return v3(a.x[0] * s, a.x[1] * s, a.x[2] * s);
}

// cross
__device__ __forceinline__ V3 gmp_cross(const V3& a, const V3& b) {
    return v3(a.x[1] * b.x[2] - a.x[2] * b.x[1],
              a.x[2] * b.x[0] - a.x[0] * b.x[2],
              a.x[0] * b.x[1] - a.x[1] * b.x[0]);
}

__device__ __forceinline__ bool v3_eq(const V3& a, const V3& b) {
    return a.x[0] == b.x[0] && a.x[1] == b.x[1] && a.x[2] == b.x[2];
}

// [f64; 3] and the helpers above for it (detmath.rs, generic over Real), for the GJK stall
// recovery (gmp_separated_finish) only. IEEE double + - * /, never contracted, on both sides.
struct V3D {
    double x[3];
};

__device__ __forceinline__ double gmp_dot(const V3D& a, const V3D& b) {
    return a.x[0] * b.x[0] + a.x[1] * b.x[1] + a.x[2] * b.x[2];
}

__device__ __forceinline__ V3D gmp_sub(const V3D& a, const V3D& b) {
    V3D o;
    o.x[0] = a.x[0] - b.x[0];
    o.x[1] = a.x[1] - b.x[1];
    o.x[2] = a.x[2] - b.x[2];
    return o;
}

__device__ __forceinline__ V3D gmp_add(const V3D& a, const V3D& b) {
    V3D o;
    o.x[0] = a.x[0] + b.x[0];
    o.x[1] = a.x[1] + b.x[1];
    o.x[2] = a.x[2] + b.x[2];
    return o;
}

__device__ __forceinline__ V3D gmp_scale(const V3D& a, double s) {
    V3D o;
    o.x[0] = a.x[0] * s;
    o.x[1] = a.x[1] * s;
    o.x[2] = a.x[2] * s;
    return o;
}

__device__ __forceinline__ V3D gmp_cross(const V3D& a, const V3D& b) {
    V3D o;
    o.x[0] = a.x[1] * b.x[2] - a.x[2] * b.x[1];
    o.x[1] = a.x[2] * b.x[0] - a.x[0] * b.x[2];
    o.x[2] = a.x[0] * b.x[1] - a.x[1] * b.x[0];
    return o;
}

__device__ __forceinline__ bool v3_eq(const V3D& a, const V3D& b) {
    return a.x[0] == b.x[0] && a.x[1] == b.x[1] && a.x[2] == b.x[2];
}

// The zero vector, for V3 and V3D.
template <typename V>
__device__ __forceinline__ V gmp_zero() {
    V o;
    o.x[0] = 0;
    o.x[1] = 0;
    o.x[2] = 0;
    return o;
}

// -a, for V3 and V3D.
template <typename V>
__device__ __forceinline__ V gmp_neg(const V& a) {
    V o;
    o.x[0] = -a.x[0];
    o.x[1] = -a.x[1];
    o.x[2] = -a.x[2];
    return o;
}

// std::f32::consts::FRAC_2_PI, written as in the Rust standard library.
#define GMP_FRAC_2_PI 0.636619772367581343075535053490057448f
#define GMP_PIO2_HI 1.5703125f
#define GMP_PIO2_LO 4.8382679e-4f

// sincos
__device__ __forceinline__ void gmp_sincos(float x, float* sout, float* cout) {
    float k = floorf(x * GMP_FRAC_2_PI + 0.5f);
    float r = (x - k * GMP_PIO2_HI) - k * GMP_PIO2_LO;
    float r2 = r * r;
    float s = r + r * r2 * (-1.6666667e-1f + r2 * (8.3333333e-3f + r2 * (-1.984127e-4f + r2 * 2.755732e-6f)));
    float c = 1.0f + r2 * (-0.5f + r2 * (4.1666667e-2f + r2 * (-1.3888889e-3f + r2 * 2.4801587e-5f)));
    int q = ((int)k) & 3;
    if (q == 0) {
        *sout = s;
        *cout = c;
    } else if (q == 1) {
        *sout = c;
        *cout = -s;
    } else if (q == 2) {
        *sout = -s;
        *cout = -c;
    } else {
        *sout = -c;
        *cout = s;
    }
}

// axis_angle
__device__ __forceinline__ void gmp_axis_angle(const float* axis, float angle, float* o) {
    float s, c;
    gmp_sincos(angle, &s, &c);
    float t = 1.0f - c;
    float x = axis[0], y = axis[1], z = axis[2];
    o[0] = t * x * x + c;
    o[1] = t * x * y - s * z;
    o[2] = t * x * z + s * y;
    o[3] = t * x * y + s * z;
    o[4] = t * y * y + c;
    o[5] = t * y * z - s * x;
    o[6] = t * x * z - s * y;
    o[7] = t * y * z + s * x;
    o[8] = t * z * z + c;
}

// ---- cpu.rs: frame_poses ----

// The joint value of variable `var`: the configuration's value for group joints, the base state
// otherwise (CpuChecker::fill_state then state[var]).
__device__ __forceinline__ float gmp_var_value(const GmpModel& m, const float* q, unsigned var) {
    int g = m.var_group[var];
    return g >= 0 ? q[g] : m.base_state[var];
}

// One step of frame_poses: the joint frame `origin * local(q)` of a joint with unit `axis`
// (kind 0 revolute, 1 prismatic) at joint value `qv`, relative to its parent frame. Shared with the
// robot-specialised kernels (src/gpu/specialise.rs), which pass the robot's constants.
__device__ __forceinline__ Xf gmp_joint_frame(const Xf& origin, const float* axis, unsigned kind, float qv) {
    Xf local;
    if (kind == 0u) {
        gmp_axis_angle(axis, qv, local.r);
        local.t[0] = 0.0f;
        local.t[1] = 0.0f;
        local.t[2] = 0.0f;
    } else {
        local = xf_identity();
        local.t[0] = axis[0] * qv;
        local.t[1] = axis[1] * qv;
        local.t[2] = axis[2] * qv;
    }
    return xf_mul(origin, local);
}

// frame_poses
__device__ __forceinline__ void gmp_fk(const GmpModel& m, const float* q, Xf* out) {
    for (unsigned i = 0; i < m.num_frames; i++) {
        const GmpFrame& f = m.frames[i];
        float qv = f.mult * gmp_var_value(m, q, f.var) + f.offset;
        Xf origin;
#pragma unroll
        for (int k = 0; k < 9; k++) origin.r[k] = f.r[k];
        origin.t[0] = f.t[0];
        origin.t[1] = f.t[1];
        origin.t[2] = f.t[2];
        Xf joint = gmp_joint_frame(origin, f.axis, f.kind, qv);
        if (f.parent < 0) {
            out[i] = joint;
        } else {
            out[i] = xf_mul(out[f.parent], joint);
        }
    }
}

// frame_of
__device__ __forceinline__ Xf gmp_frame_of(const Xf* frames, int f) {
    if (f < 0) return xf_identity();
    return frames[f];
}

// Configuration `step` of a motion: start + diff * (step / segments), joint by joint
// (CpuChecker::motion_valid, Sweep::edge_frames).
__device__ __forceinline__ void gmp_interpolate(const float* start, const float* diff, unsigned dof,
                                                unsigned step, unsigned segments, float* qloc) {
    float t = (float)step / (float)segments;
    for (unsigned j = 0; j < dof; j++) qloc[j] = start[j] + diff[j] * t;
}

// ---- gjk.rs ----

// Shape kinds of ShapeRef.
#define GMP_SHAPE_POLY 0
#define GMP_SHAPE_BOX 1
#define GMP_SHAPE_POINT 2
#define GMP_SHAPE_CYLINDER 3

// ShapeRef: Poly {xf, verts, offsets, targets}, Box {xf, h}, Point {c}, Cylinder {xf, r, hz}.
struct GmpShape {
    int kind;
    Xf xf;
    float p[3];  // Box: h; Point: c; Cylinder: r, hz
    const float* verts;
    const unsigned* offsets;
    const unsigned* targets;
};

// poly_support_local
__device__ __forceinline__ V3 gmp_poly_support_local(const float* verts, const unsigned* offsets,
                                                      const unsigned* targets, unsigned* cache,
                                                      const V3& d) {
    unsigned best = *cache;
    V3 bv = v3(verts[best * 3], verts[best * 3 + 1], verts[best * 3 + 2]);
    float best_v = gmp_dot(bv, d);
    for (;;) {
        unsigned cur = best;
        unsigned a = offsets[cur], b = offsets[cur + 1];
        for (unsigned e = a; e < b; e++) {
            unsigned n = targets[e];
            V3 nv = v3(verts[n * 3], verts[n * 3 + 1], verts[n * 3 + 2]);
            float v = gmp_dot(nv, d);
            if (v > best_v) {
                best_v = v;
                best = n;
            }
        }
        if (best == cur) break;
    }
    *cache = best;
    return v3(verts[best * 3], verts[best * 3 + 1], verts[best * 3 + 2]);
}

// ShapeRef::support
__device__ __forceinline__ V3 gmp_support(const GmpShape& s, const V3& d, unsigned* cache) {
    if (s.kind == GMP_SHAPE_POLY) {
        V3 dl = xf_rotate_inv(s.xf, d);
        V3 p = gmp_poly_support_local(s.verts, s.offsets, s.targets, cache, dl);
        return xf_apply(s.xf, p);
    } else if (s.kind == GMP_SHAPE_BOX) {
        V3 dl = xf_rotate_inv(s.xf, d);
        V3 p = v3(dl.x[0] >= 0.0f ? s.p[0] : -s.p[0],
                  dl.x[1] >= 0.0f ? s.p[1] : -s.p[1],
                  dl.x[2] >= 0.0f ? s.p[2] : -s.p[2]);
        return xf_apply(s.xf, p);
    } else if (s.kind == GMP_SHAPE_POINT) {
        return v3(s.p[0], s.p[1], s.p[2]);
    } else {
        V3 dl = xf_rotate_inv(s.xf, d);
        float len = sqrtf(dl.x[0] * dl.x[0] + dl.x[1] * dl.x[1]);
        float r = s.p[0], hz = s.p[1];
        V3 p;
        if (len > 0.0f) {
            p = v3(r * dl.x[0] / len, r * dl.x[1] / len, dl.x[2] >= 0.0f ? hz : -hz);
        } else {
            p = v3(0.0f, 0.0f, dl.x[2] >= 0.0f ? hz : -hz);
        }
        return xf_apply(s.xf, p);
    }
}

// The simplex routines are templates over the scalar T and the vector V: <float, V3> in the
// iteration, <double, V3D> in the stall recovery (their Rust twins are generic over Real).

// closest_segment
template <typename T, typename V>
__device__ __forceinline__ V gmp_closest_segment(V* s, int* n) {
    V a = s[0];
    V b = s[1];
    V ab = gmp_sub(b, a);
    T denom = gmp_dot(ab, ab);
    T t = -gmp_dot(a, ab);
    if (t <= T(0)) {
        *n = 1;
        return a;
    }
    if (t >= denom) {
        s[0] = b;
        *n = 1;
        return b;
    }
    return gmp_add(a, gmp_scale(ab, t / denom));
}

// closest_triangle (returns false for None)
template <typename T, typename V>
__device__ __forceinline__ bool gmp_closest_triangle(V* s, int* n, V* out) {
    V a = s[0];
    V b = s[1];
    V c = s[2];
    V ab = gmp_sub(b, a);
    V ac = gmp_sub(c, a);
    V ap = gmp_neg(a);
    T d1 = gmp_dot(ab, ap);
    T d2 = gmp_dot(ac, ap);
    if (d1 <= T(0) && d2 <= T(0)) {
        *n = 1;
        *out = a;
        return true;
    }
    V bp = gmp_neg(b);
    T d3 = gmp_dot(ab, bp);
    T d4 = gmp_dot(ac, bp);
    if (d3 >= T(0) && d4 <= d3) {
        s[0] = b;
        *n = 1;
        *out = b;
        return true;
    }
    T vc = d1 * d4 - d3 * d2;
    if (vc <= T(0) && d1 >= T(0) && d3 <= T(0)) {
        T v = d1 / (d1 - d3);
        *n = 2;
        *out = gmp_add(a, gmp_scale(ab, v));
        return true;
    }
    V cp = gmp_neg(c);
    T d5 = gmp_dot(ab, cp);
    T d6 = gmp_dot(ac, cp);
    if (d6 >= T(0) && d5 <= d6) {
        s[0] = c;
        *n = 1;
        *out = c;
        return true;
    }
    T vb = d5 * d2 - d1 * d6;
    if (vb <= T(0) && d2 >= T(0) && d6 <= T(0)) {
        T w = d2 / (d2 - d6);
        s[1] = c;
        *n = 2;
        *out = gmp_add(a, gmp_scale(ac, w));
        return true;
    }
    T va = d3 * d6 - d5 * d4;
    if (va <= T(0) && (d4 - d3) >= T(0) && (d5 - d6) >= T(0)) {
        T w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        s[0] = b;
        s[1] = c;
        *n = 2;
        *out = gmp_add(b, gmp_scale(gmp_sub(c, b), w));
        return true;
    }
    T sum = va + vb + vc;
    if (isnan(sum) || sum <= T(0)) return false;
    T v = vb / sum;
    T w = vc / sum;
    *out = gmp_add(gmp_add(a, gmp_scale(ab, v)), gmp_scale(ac, w));
    return true;
}

// closest_tetrahedron (returns false for None; with flat, every face is a candidate)
template <typename T, typename V>
__device__ __forceinline__ bool gmp_closest_tetrahedron(V* s, int* n, V* out, bool flat) {
    // Faces as (three vertex indices, opposite vertex), in the Rust order.
    const int faces[4][4] = {{0, 1, 2, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {1, 3, 2, 0}};
    bool have_best = false;
    T best_d = T(0);
    V best_t[3];
    int best_n = 0;
    V best_p = gmp_zero<V>();
    bool outside_any = false;
#pragma unroll
    for (int fi = 0; fi < 4; fi++) {
        V a = s[faces[fi][0]];
        V b = s[faces[fi][1]];
        V c = s[faces[fi][2]];
        V d = s[faces[fi][3]];
        V nrm = gmp_cross(gmp_sub(b, a), gmp_sub(c, a));
        T side_o = -gmp_dot(a, nrm);
        T side_d = gmp_dot(gmp_sub(d, a), nrm);
        if (flat || side_o * side_d < T(0)) {
            outside_any = true;
            V t[3];
            t[0] = a;
            t[1] = b;
            t[2] = c;
            int tn = 3;
            V p;
            if (!gmp_closest_triangle<T, V>(t, &tn, &p)) return false;
            T dd = gmp_dot(p, p);
            bool better = !have_best || dd < best_d;
            if (better) {
                have_best = true;
                best_d = dd;
                best_t[0] = t[0];
                best_t[1] = t[1];
                best_t[2] = t[2];
                best_n = tn;
                best_p = p;
            }
        }
    }
    if (!outside_any) return false;
    if (!have_best) return false;
    s[0] = best_t[0];
    s[1] = best_t[1];
    s[2] = best_t[2];
    s[3] = gmp_zero<V>();
    *n = best_n;
    *out = best_p;
    return true;
}

// closest_on_simplex
template <typename T, typename V>
__device__ __forceinline__ bool gmp_closest_on_simplex(V* s, int* n, V* out) {
    if (*n == 1) {
        *out = s[0];
        return true;
    } else if (*n == 2) {
        *out = gmp_closest_segment<T, V>(s, n);
        return true;
    } else if (*n == 3) {
        return gmp_closest_triangle<T, V>(s, n, out);
    }
    return gmp_closest_tetrahedron<T, V>(s, n, out, false);
}

// is_flat
__device__ __forceinline__ bool gmp_is_flat(const V3D* t) {
    V3D ab = gmp_sub(t[1], t[0]);
    V3D ac = gmp_sub(t[2], t[0]);
    V3D ad = gmp_sub(t[3], t[0]);
    double vol6 = gmp_dot(gmp_cross(ab, ac), ad);
    return vol6 * vol6 <= 1e-18 * (gmp_dot(ab, ab) * gmp_dot(ac, ac) * gmp_dot(ad, ad));
}

// Most extra iterations after a stall (gjk.rs, RECOVERY_ITERATIONS).
#define GMP_RECOVERY_ITERATIONS 16

// separated_finish: the stall recovery, the simplex in double. Out of line, so that
// gmp_separated keeps the registers of the f32 iteration.
__device__ __noinline__ bool gmp_separated_finish(const GmpShape& a, const GmpShape& b, float m2,
                                                  const V3* s, int n, unsigned* ca, unsigned* cb) {
    V3D t[4];
    for (int k = 0; k < 4; k++) t[k] = gmp_zero<V3D>();
    for (int k = 0; k < n; k++) {
        t[k].x[0] = (double)s[k].x[0];
        t[k].x[1] = (double)s[k].x[1];
        t[k].x[2] = (double)s[k].x[2];
    }
    double m2d = (double)m2;
    for (int it = 0; it < GMP_RECOVERY_ITERATIONS; it++) {
        V3D vd;
        if (!gmp_closest_on_simplex<double, V3D>(t, &n, &vd)) {
            if (!(n == 4 && gmp_is_flat(t))) return false;
            if (!gmp_closest_tetrahedron<double, V3D>(t, &n, &vd, true)) return false;
        }
        double vvd = gmp_dot(vd, vd);
        if (isnan(vvd) || vvd <= m2d) return false;
        V3 v = v3((float)vd.x[0], (float)vd.x[1], (float)vd.x[2]);
        float vv = gmp_dot(v, v);
        V3 nv = v3(-v.x[0], -v.x[1], -v.x[2]);
        V3 w = gmp_sub(gmp_support(a, nv, ca), gmp_support(b, v, cb));
        float vw = gmp_dot(v, w);
        if (vw > 0.0f && vw * vw > m2 * vv) return true;
        V3D wd;
        wd.x[0] = (double)w.x[0];
        wd.x[1] = (double)w.x[1];
        wd.x[2] = (double)w.x[2];
        double vwd = gmp_dot(vd, wd);
        if (vvd - vwd <= vvd * 1e-6) return false;
        for (int k = 0; k < n; k++) {
            if (v3_eq(t[k], wd)) return false;
        }
        t[n] = wd;
        n += 1;
    }
    return false;
}

// separated (its stall exits go to gmp_separated_finish)
__device__ __noinline__ bool gmp_separated(const GmpShape& a, const GmpShape& b, float margin, V3 dir,
                                           unsigned* ca, unsigned* cb) {
    V3 d0 = gmp_dot(dir, dir) > 0.0f ? dir : v3(1.0f, 0.0f, 0.0f);
    V3 nd0 = v3(-d0.x[0], -d0.x[1], -d0.x[2]);
    V3 v = gmp_sub(gmp_support(a, nd0, ca), gmp_support(b, d0, cb));
    V3 s[4];
    s[0] = v;
    s[1] = v3(0.0f, 0.0f, 0.0f);
    s[2] = s[1];
    s[3] = s[1];
    int n = 1;
    float m2 = margin * margin;
    for (int it = 0; it < GMP_MAX_ITERATIONS; it++) {
        float vv = gmp_dot(v, v);
        if (isnan(vv) || vv <= m2) return false;
        V3 nv = v3(-v.x[0], -v.x[1], -v.x[2]);
        V3 w = gmp_sub(gmp_support(a, nv, ca), gmp_support(b, v, cb));
        float vw = gmp_dot(v, w);
        if (vw > 0.0f && vw * vw > m2 * vv) return true;
        bool stalled = vv - vw <= vv * 1e-6f;
        for (int k = 0; k < n; k++) {
            if (v3_eq(s[k], w)) stalled = true;
        }
        if (stalled) return gmp_separated_finish(a, b, m2, s, n, ca, cb);
        s[n] = w;
        n += 1;
        V3 p;
        if (!gmp_closest_on_simplex<float, V3>(s, &n, &p)) {
            return gmp_separated_finish(a, b, m2, s, n, ca, cb);
        }
        v = p;
    }
    return gmp_separated_finish(a, b, m2, s, n, ca, cb);
}

// ---- cpu.rs: sphere_near_obstacle, obstacle_shape, config_valid ----

__device__ __forceinline__ Xf gmp_obstacle_pose(const GmpObstacle& o) {
    Xf x;
#pragma unroll
    for (int k = 0; k < 9; k++) x.r[k] = o.r[k];
    x.t[0] = o.t[0];
    x.t[1] = o.t[1];
    x.t[2] = o.t[2];
    return x;
}

// The box test on the centre in the box's frame (q): its distance to the box within r + margin.
__device__ __forceinline__ bool gmp_box_local_near(const V3& q, float r, const GmpObstacle& o, float margin) {
    float reach = r + margin;
    float ex = fmaxf(fabsf(q.x[0]) - o.params[0], 0.0f);
    float ey = fmaxf(fabsf(q.x[1]) - o.params[1], 0.0f);
    float ez = fmaxf(fabsf(q.x[2]) - o.params[2], 0.0f);
    return ex * ex + ey * ey + ez * ez <= reach * reach;
}

// sphere_near_obstacle, box arm
__device__ __forceinline__ bool gmp_near_box(const V3& c, float r, const GmpObstacle& o, float margin) {
    return gmp_box_local_near(xf_apply_inv(gmp_obstacle_pose(o), c), r, o, margin);
}

// The cylinder test on the centre in the cylinder's frame (q).
__device__ __forceinline__ bool gmp_cylinder_local_near(const V3& q, float r, const GmpObstacle& o, float margin) {
    float reach = r + margin;
    float rad = sqrtf(q.x[0] * q.x[0] + q.x[1] * q.x[1]);
    float er = fmaxf(rad - o.params[0], 0.0f);
    float ez = fmaxf(fabsf(q.x[2]) - o.params[1], 0.0f);
    return er * er + ez * ez <= reach * reach;
}

// sphere_near_obstacle, cylinder arm
__device__ __forceinline__ bool gmp_near_cylinder(const V3& c, float r, const GmpObstacle& o, float margin) {
    return gmp_cylinder_local_near(xf_apply_inv(gmp_obstacle_pose(o), c), r, o, margin);
}

// The robot-specialised kernels' folded builds (src/gpu/specialise.rs, Layout::folds) only:
// true when the obstacle's rotation is about z (r[2] = r[5] = r[6] = r[7] = 0, either sign) and
// its translation finite. Then xf_apply_inv's products with those entries are exact zeros (the
// centre is finite there) and gmp_apply_inv_z leaves them out: each coordinate equals
// xf_apply_inv's as a real number (only the sign of a zero can differ), so the tests below give
// gmp_near_box's and gmp_near_cylinder's verdicts (fabsf, fmaxf, sqrtf and <= do not see the sign).
__device__ __forceinline__ bool gmp_obstacle_zrot(const GmpObstacle& o) {
    return o.r[2] == 0.0f && o.r[5] == 0.0f && o.r[6] == 0.0f && o.r[7] == 0.0f &&
           fabsf(o.t[0]) <= 1e30f && fabsf(o.t[1]) <= 1e30f && fabsf(o.t[2]) <= 1e30f;
}

// xf_apply_inv for a rotation about z (gmp_obstacle_zrot): the same products and sums in the same
// order, less the products with the zero entries.
__device__ __forceinline__ V3 gmp_apply_inv_z(const GmpObstacle& o, const V3& c) {
    float d0 = c.x[0] - o.t[0];
    float d1 = c.x[1] - o.t[1];
    float d2 = c.x[2] - o.t[2];
    return v3(o.r[0] * d0 + o.r[3] * d1, o.r[1] * d0 + o.r[4] * d1, o.r[8] * d2);
}

// gmp_near_box for a rotation about z.
__device__ __forceinline__ bool gmp_near_box_z(const V3& c, float r, const GmpObstacle& o, float margin) {
    return gmp_box_local_near(gmp_apply_inv_z(o, c), r, o, margin);
}

// gmp_near_cylinder for a rotation about z.
__device__ __forceinline__ bool gmp_near_cylinder_z(const V3& c, float r, const GmpObstacle& o, float margin) {
    return gmp_cylinder_local_near(gmp_apply_inv_z(o, c), r, o, margin);
}

// sphere_near_obstacle, sphere and mesh arm (bounding sphere of the obstacle)
__device__ __forceinline__ bool gmp_near_ball(const V3& c, float r, const GmpObstacle& o, float margin) {
    float reach = r + margin;
    V3 oc = v3(o.center[0], o.center[1], o.center[2]);
    V3 d = gmp_sub(c, oc);
    float rr = reach + o.radius;
    return gmp_dot(d, d) <= rr * rr;
}

// sphere_near_obstacle
__device__ __forceinline__ bool gmp_sphere_near_obstacle(const V3& c, float r, const GmpObstacle& o,
                                                         float margin) {
    if (o.kind == GMP_BOX) return gmp_near_box(c, r, o, margin);
    if (o.kind == GMP_CYLINDER) return gmp_near_cylinder(c, r, o, margin);
    if (o.kind == GMP_SPHERE || o.kind == GMP_MESH) return gmp_near_ball(c, r, o, margin);
    return false;
}

// ProxGrid::lookup (src/collision/prox.rs): the obstacle records that may be within the grid's
// reach of the point c, bit i for record i < 32 (the records it does not describe always set);
// every bit for a non-finite point. m.prox must not be null.
__device__ __forceinline__ unsigned gmp_prox(const GmpModel& m, const V3& c) {
    const float fx = (c.x[0] - m.prox_lo[0]) * m.prox_inv_h;
    const float fy = (c.x[1] - m.prox_lo[1]) * m.prox_inv_h;
    const float fz = (c.x[2] - m.prox_lo[2]) * m.prox_inv_h;
    if (fx >= 0.0f && fx < (float)m.prox_dim[0] && fy >= 0.0f && fy < (float)m.prox_dim[1] &&
        fz >= 0.0f && fz < (float)m.prox_dim[2]) {
        const unsigned i = ((unsigned)fz * m.prox_dim[1] + (unsigned)fy) * m.prox_dim[0] + (unsigned)fx;
        return m.prox[i] | m.prox_always;
    }
    const bool finite = fabsf(fx) <= 3.40282347e38f && fabsf(fy) <= 3.40282347e38f && fabsf(fz) <= 3.40282347e38f;
    return finite ? m.prox_always : 0xffffffffu;
}

// obstacle_shape
__device__ __forceinline__ GmpShape gmp_obstacle_shape(const GmpModel& m, const GmpObstacle& o) {
    GmpShape s;
    s.xf = gmp_obstacle_pose(o);
    s.verts = m.mesh_verts;
    s.offsets = m.mesh_edge_offsets;
    s.targets = m.mesh_edge_targets;
    if (o.kind == GMP_BOX) {
        s.kind = GMP_SHAPE_BOX;
        s.p[0] = o.params[0];
        s.p[1] = o.params[1];
        s.p[2] = o.params[2];
    } else if (o.kind == GMP_CYLINDER) {
        s.kind = GMP_SHAPE_CYLINDER;
        s.p[0] = o.params[0];
        s.p[1] = o.params[1];
        s.p[2] = 0.0f;
    } else if (o.kind == GMP_SPHERE) {
        s.kind = GMP_SHAPE_POINT;
        s.p[0] = o.t[0];
        s.p[1] = o.t[1];
        s.p[2] = o.t[2];
    } else {
        s.kind = GMP_SHAPE_POLY;
        s.p[0] = 0.0f;
        s.p[1] = 0.0f;
        s.p[2] = 0.0f;
    }
    return s;
}

__device__ __forceinline__ GmpShape gmp_body_shape(const GmpModel& m, const Xf& xf) {
    GmpShape s;
    s.kind = GMP_SHAPE_POLY;
    s.xf = xf;
    s.p[0] = 0.0f;
    s.p[1] = 0.0f;
    s.p[2] = 0.0f;
    s.verts = m.verts;
    s.offsets = m.edge_offsets;
    s.targets = m.edge_targets;
    return s;
}

__device__ __forceinline__ V3 gmp_sphere_center(const float* sp) { return v3(sp[0], sp[1], sp[2]); }

// sweep.rs body_sweep_below: half the distance a point of body b travels, relative to frame c
// (-1: the world), per segment of a motion with group differences `diff` over `n` segments (0
// when diff is null): the joint terms of the frames after c, added last frame first.
__device__ __forceinline__ float gmp_body_sweep_below(const GmpModel& m, unsigned b, int c, const float* diff,
                                                      unsigned n) {
    if (diff == nullptr) return 0.0f;
    float nf = (float)n;
    float acc = 0.0f;
    int from = c + 1 > 0 ? c + 1 : 0;
    for (int f = (int)m.num_frames - 1; f >= from; f--) {
        const GmpFrame& fr = m.frames[f];
        int k = m.var_group[fr.var];
        if (k < 0) continue;
        float step = fabsf(diff[k]) / nf;
        acc = acc + fabsf(fr.mult) * step * m.reach[b * m.num_frames + f];
    }
    return 0.5f * acc;
}

// sweep.rs body_sweep: the whole sweep of body b.
__device__ __forceinline__ float gmp_body_sweep(const GmpModel& m, unsigned b, const float* diff, unsigned n) {
    return gmp_body_sweep_below(m, b, -1, diff, n);
}

// sweep.rs frame_lca: the lowest frame both fa and fb hang from (-1: the root link). Frames are in
// topological order; a parent that does not come first gives -1.
__device__ __forceinline__ int gmp_frame_lca(const GmpModel& m, int fa, int fb) {
    while (fa != fb) {
        int deeper = fa > fb ? fa : fb;
        int up = deeper < (int)m.num_frames ? m.frames[deeper].parent : -1;
        if (up >= deeper) return -1;
        if (up < -1) up = -1;
        if (fa > fb) fa = up; else fb = up;
    }
    return fa;
}

// sweep.rs Sweep::pair: the growths of self pair (a, b), each body's sweep below the frame both
// hang from (0 when diff is null).
__device__ __forceinline__ void gmp_pair_sweeps(const GmpModel& m, unsigned a, unsigned b, const float* diff,
                                                unsigned n, float* ea, float* eb) {
    int c = gmp_frame_lca(m, m.bodies[a].frame, m.bodies[b].frame);
    *ea = gmp_body_sweep_below(m, a, c, diff, n);
    *eb = gmp_body_sweep_below(m, b, c, diff, n);
}

// gmp_pair_sweeps out of line, for the robot-specialised kernels, which call it only where a self
// pair is within reach with the bodies' whole sweeps (src/gpu/specialise.rs).
__device__ __noinline__ void gmp_pair_sweeps_at(const GmpModel& m, unsigned a, unsigned b, const float* diff,
                                                unsigned n, float* ea, float* eb) {
    gmp_pair_sweeps(m, a, b, diff, n, ea, eb);
}

// cpu.rs frames_valid, one (body, obstacle) test once the body's bounding sphere (world centre bc,
// grown by e) was found near the obstacle: the covering spheres, then the exact test. true = the
// two are apart (frames_valid goes on), false = in contact.
__device__ __forceinline__ bool gmp_body_obstacle_clear(const GmpModel& m, const Xf& xf, const GmpBody& b,
                                                        const GmpObstacle& o, const V3& bc, float e) {
    const float mg = m.margin;
    if (b.inflate == 0.0f && b.sphere_count > 0u) {
        bool near = false;
        for (unsigned si = b.sphere_start; si < b.sphere_start + b.sphere_count; si++) {
            const float* sp = m.spheres + 4 * si;
            V3 c = xf_apply(xf, gmp_sphere_center(sp));
            if (gmp_sphere_near_obstacle(c, sp[3] + e, o, mg)) {
                near = true;
                break;
            }
        }
        if (!near) return true;
    }
    if (b.vert_count == 1u && o.kind != GMP_MESH) return false;
    float extra = o.kind == GMP_SPHERE ? o.params[0] : 0.0f;
    unsigned ca = b.vert_start;
    unsigned cb = o.mesh_start;
    V3 ocenter = v3(o.center[0], o.center[1], o.center[2]);
    V3 dir = gmp_sub(bc, ocenter);
    GmpShape body = gmp_body_shape(m, xf);
    GmpShape obs = gmp_obstacle_shape(m, o);
    return gmp_separated(body, obs, mg + b.inflate + e + extra, dir, &ca, &cb);
}

// cpu.rs frames_valid, one self pair once the bodies' bounding spheres (centres ca - cb = d, grown
// by ea and eb) were found near: the covering-sphere pairs, then the exact test. true = apart.
__device__ __forceinline__ bool gmp_pair_clear(const GmpModel& m, const Xf& xa, const Xf& xb, const GmpBody& ba,
                                               const GmpBody& bb, float ea, float eb, const V3& d) {
    const float mg = m.margin;
    bool near = false;
    for (unsigned si = ba.sphere_start; si < ba.sphere_start + ba.sphere_count && !near; si++) {
        const float* s = m.spheres + 4 * si;
        V3 c1 = xf_apply(xa, gmp_sphere_center(s));
        for (unsigned ti = bb.sphere_start; ti < bb.sphere_start + bb.sphere_count; ti++) {
            const float* t = m.spheres + 4 * ti;
            V3 c2 = xf_apply(xb, gmp_sphere_center(t));
            V3 dd = gmp_sub(c1, c2);
            float r2 = s[3] + t[3] + mg + ea + eb;
            if (gmp_dot(dd, dd) <= r2 * r2) {
                near = true;
                break;
            }
        }
    }
    if (!near) return true;
    if (ba.vert_count == 1u && bb.vert_count == 1u) return false;
    GmpShape sha = gmp_body_shape(m, xa);
    GmpShape shb = gmp_body_shape(m, xb);
    unsigned va = ba.vert_start;
    unsigned vb = bb.vert_start;
    return gmp_separated(sha, shb, mg + ba.inflate + bb.inflate + ea + eb, d, &va, &vb);
}

// Out-of-line forms of the two tests above for the robot-specialised kernels, whose straight-line
// broad phase calls them only when a bounding test fires (src/gpu/specialise.rs).
__device__ __noinline__ bool gmp_body_obstacle_clear_at(const GmpModel& m, const Xf& xf, unsigned bi, unsigned oi,
                                                        V3 bc, float e) {
    return gmp_body_obstacle_clear(m, xf, m.bodies[bi], m.obstacles[oi], bc, e);
}

__device__ __noinline__ bool gmp_pair_clear_at(const GmpModel& m, const Xf& xa, const Xf& xb, unsigned ia,
                                               unsigned ib, float ea, float eb, V3 d) {
    return gmp_pair_clear(m, xa, xb, m.bodies[ia], m.bodies[ib], ea, eb, d);
}

// cpu.rs frames_valid: config_valid after frame_poses, every body grown by its sweep for the
// motion (diff, n) when diff is not null (self pairs by gmp_pair_sweeps). true = collision free.
//
// The tests dealt out over `lanes` threads (gmp_frames_valid_share): this thread runs the
// body-obstacle tests k = lane, lane + lanes, ... of the num_bodies x num_obstacles grid (body
// major) and the self pairs pi = lane, lane + lanes, ...; each test is the single-thread
// arithmetic, so the configuration is free exactly when every share is (a warp-wide AND; the
// order of the tests does not change any of them).
__device__ bool gmp_frames_valid_share(const GmpModel& m, const Xf* frames, const float* diff, unsigned n,
                                       unsigned lane, unsigned lanes) {
    const float mg = m.margin;
    const unsigned no = m.num_obstacles;
    // The body of the last test and its pose, centre and sweep (consecutive tests of one
    // thread share them when lanes == 1).
    unsigned cached = 0xffffffffu;
    float e = 0.0f;
    Xf xf;
    V3 bc;
    // Test k = bi * no + oi, stepped by lanes (k += lanes is bi += step_b, oi += step_o, then
    // one wrap of oi) without a division per test.
    unsigned bi = no > 0u ? lane / no : m.num_bodies;
    unsigned oi = no > 0u ? lane - bi * no : 0u;
    const unsigned step_b = no > 0u ? lanes / no : 0u;
    const unsigned step_o = no > 0u ? lanes - step_b * no : 0u;
    for (; bi < m.num_bodies; bi += step_b, oi += step_o) {
        if (oi >= no) {
            oi -= no;
            bi++;
            if (bi >= m.num_bodies) break;
        }
        const GmpBody& b = m.bodies[bi];
        if (bi != cached) {
            cached = bi;
            e = gmp_body_sweep(m, bi, diff, n);
            xf = gmp_frame_of(frames, b.frame);
            bc = xf_apply(xf, v3(b.center[0], b.center[1], b.center[2]));
        }
        const GmpObstacle& o = m.obstacles[oi];
        if (o.kind == GMP_NONE || !gmp_sphere_near_obstacle(bc, b.radius + e, o, mg)) continue;
        if (!gmp_body_obstacle_clear(m, xf, b, o, bc, e)) return false;
    }
    for (unsigned pi = lane; pi < m.num_self_pairs; pi += lanes) {
        const GmpBody& ba = m.bodies[m.self_pairs[2 * pi]];
        const GmpBody& bb = m.bodies[m.self_pairs[2 * pi + 1]];
        float ea, eb;
        gmp_pair_sweeps(m, m.self_pairs[2 * pi], m.self_pairs[2 * pi + 1], diff, n, &ea, &eb);
        Xf xa = gmp_frame_of(frames, ba.frame);
        Xf xb = gmp_frame_of(frames, bb.frame);
        V3 ca = xf_apply(xa, v3(ba.center[0], ba.center[1], ba.center[2]));
        V3 cb = xf_apply(xb, v3(bb.center[0], bb.center[1], bb.center[2]));
        V3 d = gmp_sub(ca, cb);
        float rr = ba.radius + bb.radius + mg + ea + eb;
        if (gmp_dot(d, d) > rr * rr) continue;
        if (!gmp_pair_clear(m, xa, xb, ba, bb, ea, eb, d)) return false;
    }
    return true;
}

__device__ bool gmp_frames_valid(const GmpModel& m, const Xf* frames, const float* diff, unsigned n) {
    return gmp_frames_valid_share(m, frames, diff, n, 0u, 1u);
}

// config_valid: q holds the `dof` group values of one configuration (f32).
__device__ __forceinline__ bool gmp_config_valid(const GmpModel& m, const float* q) {
    Xf frames[GMP_MAX_FRAMES];
    gmp_fk(m, q, frames);
    return gmp_frames_valid(m, frames, nullptr, 0u);
}

// cpu.rs CpuChecker::motion_status, for one checked configuration q of the motion (diff, n):
// 0 = free with the sweep margin, 1 = in collision, 2 = free but not with the sweep margin.
__device__ __forceinline__ unsigned gmp_motion_step_status(const GmpModel& m, const float* q, const float* diff,
                                                           unsigned n) {
    Xf frames[GMP_MAX_FRAMES];
    gmp_fk(m, q, frames);
    if (gmp_frames_valid(m, frames, diff, n)) return 0u;
    if (!gmp_frames_valid(m, frames, nullptr, 0u)) return 1u;
    return 2u;
}
