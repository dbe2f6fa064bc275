// Planner heuristics as data: the thresholds every format's model shares, with where they came
// from. A format's own constants live in its folder (formats/<name>/<name>_model.hpp); change a
// number only with the measurement that justifies it (bench/results/).
#pragma once

#include "spmvc/compiler/compiler.hpp"

namespace spmvc::heuristics {

/// Read bandwidth assumed when no device calibration is available (defined once, beside the
/// compiler's entry points, for the benchmarks too). Only ratios between candidates depend on it.
using compiler::kDefaultReadBandwidth;

/// Fixed cost of one kernel launch plus the tail of the last wave, in seconds: the floor under
/// any predicted time (launch-bound regime of small matrices).
inline constexpr double kLaunchSeconds = 4.0e-6;

/// cuSPARSE's CSR ALG2 (bitwise deterministic, the cuSPARSE engine of deterministic plans) over
/// its ALG1, per multiply: the geometric means over suite v13's 33 bandwidth-regime entries on the
/// H100 (bench/results/2026-11-24-h100-suite-v13/pass1.json: 1.114 fp64, 1.229 fp32; spread
/// 1.02-1.16 and 1.02-1.38, closest to 1 on the Kronecker graphs). The H200's are higher (1.175,
/// 1.298 in 2026-11-24-h200-suite-v13), where ALG2 is then slightly favoured.
inline constexpr double kCusparseAlg2Factor64 = 1.114;
inline constexpr double kCusparseAlg2Factor32 = 1.229;

/// cuSPARSE's CSR ALG1: each row's fixed cost beyond its bytes (its bounds and its sum's
/// reduction and store), charged as this many bytes of reading. On suite v13 (pass1 of the
/// H100's and the H200's 2026-11-24 runs, and the H200's csr-stream-33 of 2026-11-29) ALG1 ran
/// 1.20-1.28x its plain CSR-bytes prediction fp32 on the census graphs (4.8 nonzeros a row)
/// against 1.01-1.08x on rows of 25 and more; with 16 bytes a row the median absolute deviation
/// of log(measured / predicted) falls from 0.08-0.10 to 0.04-0.05 on both GPUs and precisions.
/// Without it the model handed the census graphs to cuSPARSE in fp32, where csr_stream measured
/// 1.03-1.08x faster.
inline constexpr double kCusparseRowBytes = 16.0;

/// L2 capacity that data reused within one multiply (x between gathers; y between its first
/// write and its atomic updates) can count on: half of the H100's 50 MB, as its L2 is two
/// partitions and a line read by SMs on both sides can be held twice. AMB's assumption
/// (formats/amb/amb_traffic.cpp); the traffic model (traffic.cpp) uses it for every format.
inline constexpr double kL2CacheBytes = 25.0 * 1024 * 1024;

/// Options::build auto: from this many expected multiplies (Options::multiplies) compile(CsrMatrix)
/// takes the host pipeline, whose picks multiply faster than the GPU build's by 1.4-1.5% (geomean)
/// for a one-time cost of about 170-190 ms more at 16M nonzeros. The medians over suite v13 on the
/// H200 of the multiplies after which the host pipeline's one-time cost plus N multiplies is the
/// lower (bench/results/2026-11-29-h200-first-upload/picks-32.json, planner against
/// planner_host_gpu, kernels cached): 1.8M fp64 (never on 5 of 32 entries), 550k fp32 (never on 9).
inline constexpr std::int64_t kHostPipelineMultiplies64 = 1'800'000;
inline constexpr std::int64_t kHostPipelineMultiplies32 = 550'000;

/// Seconds per dependent step (load col, gather x, accumulate) of one lane, with the loads of
/// neighbouring warps overlapping: the longest row's steps are a floor under a kernel's time.
/// Fitted on csr (R-MAT scale 20, rows of tens of thousands); every format scales it for its own
/// step (a BRO decode, a block).
inline constexpr double kCsrStepSeconds = 0.2e-6;

/// x sectors per nonzero assumed where the Profile counts none (formats::gathered_x_sectors: a
/// matrix planned from device arrays): the median of Profile::x_sectors / nnz over suite v13's 33
/// bandwidth-regime matrices (0.29 on a band, 0.5 on the 27-point stencil, 1.0 on random rows),
/// so the calibration's price per gathered sector charges such a matrix what it charges the
/// suite's typical one.
inline constexpr double kUnknownSectorsPerNonzero = 0.83;

/// The build-cost model's stages where no calibration applies (an architecture with no
/// calibrated GPU: calibration/<gpu>_build.inc has the fitted ones): the H100's medians over
/// suite v13 (bench/results/2026-11-24-h100-suite-v13/pass1.json), rounded. Host row scan and
/// host encoder (every format pooled) per nonzero, pageable host-to-device copy of the encoded
/// arrays, NVRTC's cold compile of one unit, and the GPU's row scan and array build
/// (compile(DeviceCsr)) per nonzero.
inline constexpr double kInspectSecondsPerNonzero = 2.5e-9;
inline constexpr double kEncodeSecondsPerNonzero = 3.6e-9;
inline constexpr double kUploadBytesPerSecond = 7.0e9;
inline constexpr double kCompileSeconds = 0.026;
inline constexpr double kDeviceInspectSecondsPerNonzero = 1.3e-11;
inline constexpr double kDeviceEncodeSecondsPerNonzero = 6.3e-12;
/// The GPU build of a format that writes its whole encoding (ell, sell, hyb), per encoded byte,
/// until the calibration has a device_encode row for it: the passes read the CSR arrays, clear
/// the padded arrays and scatter the nonzeros into them, about three times the encoding's bytes
/// at the H100's ~3 TB/s, rounded up for the scattered writes. An estimate from the bandwidth,
/// pending the device build's per-stage timings on the suite.
inline constexpr double kDeviceEncodeSecondsPerByte = 1.5e-12;
/// A GPU encoder that writes a whole encoding of its own (the BRO formats), until the device
/// calibration has a factor for it (the pooled one above was fitted to csr and csr_stream, which
/// write at most a few small arrays): its launches and host waits, about 10 us each (an
/// assumption: six launches, three waits), and the bytes it moves (the columns read twice, the
/// values once, the encoding written) at about half an H100's read bandwidth (an assumption: its
/// column reads are strided, a row per lane).
inline constexpr double kDeviceEncoderFixedSeconds = 90e-6;
inline constexpr double kDeviceEncoderBytesPerSecond = 1.5e12;
/// The block formats' GPU encoders (bcsr, bellpack) move more than that per nonzero: the open
/// flags (8 bytes written, scanned in place: about 24 more) and the fill's searches of the
/// block row's columns (about 16): 48 bytes per nonzero at the encoder's bandwidth (an estimate
/// from the passes, pending their per-stage timings).
inline constexpr double kDeviceBlockBytesPerNonzero = 48.0;
/// bellpack's sort of block rows: one radix pass per bit of the largest block count, each
/// reading the permutation and the block offsets, writing flags, scanning and scattering them:
/// about 48 bytes per block row and four launches (10 us each, as above) per pass.
inline constexpr double kDeviceSortBytesPerRowPass = 48.0;
inline constexpr double kDeviceSortSecondsPerPass = 40e-6;

}  // namespace spmvc::heuristics
