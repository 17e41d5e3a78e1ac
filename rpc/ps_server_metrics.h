#ifndef DISTRT_RPC_PS_SERVER_METRICS_H_
#define DISTRT_RPC_PS_SERVER_METRICS_H_

// PsServerMetrics: what a ps task exposes to Prometheus (ps_server
// --metrics_port), registered in a MetricsRegistry:
//
//   distrt_rpc_requests_total{method,code}       requests served
//   distrt_rpc_latency_seconds{method}           handling time (histogram)
//   distrt_rpc_received_bytes_total{method}      request message bytes
//   distrt_rpc_sent_bytes_total{method}          response message bytes
//   distrt_ps_variables, distrt_ps_variable_rows, distrt_ps_variable_bytes,
//   distrt_ps_hash_tables, distrt_ps_hash_table_rows  what it holds (gauges)
//   distrt_ps_duplicate_pushes_total            resent pushes not reapplied
//   distrt_ps_table_rows{table}, distrt_ps_table_clock{table}  per hash
//     embedding table: rows held, the global step it ages rows by (gauges)
//   distrt_ps_table_admitted_total{table}       rows created (admitted)
//   distrt_ps_table_evicted_total{table,reason}  rows evicted; reason: ttl
//                                               or capacity (max_rows)
//   distrt_ps_table_unknown_lookups_total{table}  pulls of ids not admitted
//   distrt_ps_table_dropped_pushes_total{table}   pushes to ids not admitted
//   distrt_ps_restored_from_checkpoint          1 when it took back its shard
//                                               at start (a restart)
//
// Record is called on every request: lock-free for a request that succeeded
// (a failed one looks up its {method, code} cell). Thread-safe.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "proto/ps_service.pb.h"
#include "runtime/metrics/metrics_registry.h"

namespace distrt::rpc {

class PsServerMetrics {
 public:
  // `method_names` index the methods Record is given; `holdings` fills a
  // GetStatusResponse's holdings, hash_tables included (called at every
  // scrape). `registry` is borrowed and must outlive this.
  static absl::StatusOr<std::unique_ptr<PsServerMetrics>> Create(
      MetricsRegistry* registry, absl::Span<const char* const> method_names,
      std::function<void(ps::GetStatusResponse*)> holdings,
      bool restored_from_checkpoint);

  void Record(int method, absl::Duration latency, absl::StatusCode code,
              int64_t bytes_received, int64_t bytes_sent);

 private:
  struct MethodCells {
    const char* name = "";
    // Its requests that succeeded: most of them, so found once, here.
    CounterCell* ok_requests = nullptr;
    HistogramCell* latency = nullptr;
    CounterCell* received = nullptr;
    CounterCell* sent = nullptr;
  };

  PsServerMetrics() = default;

  Counter* requests_ = nullptr;
  std::vector<MethodCells> methods_;
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_PS_SERVER_METRICS_H_
