#include "rpc/ps_server_metrics.h"

#include <string>
#include <utility>
#include <vector>

#include "runtime/util/status_macros.h"

namespace distrt::rpc {

absl::StatusOr<std::unique_ptr<PsServerMetrics>> PsServerMetrics::Create(
    MetricsRegistry* registry, absl::Span<const char* const> method_names,
    std::function<void(ps::GetStatusResponse*)> holdings,
    bool restored_from_checkpoint) {
  auto metrics = std::unique_ptr<PsServerMetrics>(new PsServerMetrics());
  ASSIGN_OR_RETURN(Counter * requests,
                   registry->AddCounter(
                       "distrt_rpc_requests_total",
                       "RPCs this ps task handled, by method and status code.",
                       {"method", "code"}));
  metrics->requests_ = requests;
  // 50 us to about 13 s: a small pull on loopback to a large checkpoint.
  ASSIGN_OR_RETURN(Histogram * latency,
                   registry->AddHistogram(
                       "distrt_rpc_latency_seconds",
                       "Time this ps task took to handle an RPC, by method.",
                       {"method"}, ExponentialBuckets(50e-6, 2, 19)));
  ASSIGN_OR_RETURN(
      Counter * received,
      registry->AddCounter("distrt_rpc_received_bytes_total",
                           "Bytes of request messages received, by method.",
                           {"method"}));
  ASSIGN_OR_RETURN(
      Counter * sent,
      registry->AddCounter("distrt_rpc_sent_bytes_total",
                           "Bytes of response messages sent, by method.",
                           {"method"}));
  for (const char* name : method_names) {
    const absl::string_view label[] = {name};
    const std::string ok = absl::StatusCodeToString(absl::StatusCode::kOk);
    const absl::string_view ok_labels[] = {name, ok};
    metrics->methods_.push_back(
        {name, requests->WithLabels(ok_labels), latency->WithLabels(label),
         received->WithLabels(label), sent->WithLabels(label)});
  }

  using Field = int64_t (ps::GetStatusResponse::*)() const;
  const std::vector<std::tuple<const char*, const char*, Field>> gauges = {
      {"distrt_ps_variables", "Variables (or parts of them) held.",
       &ps::GetStatusResponse::num_variables},
      {"distrt_ps_variable_rows", "Rows of variables held.",
       &ps::GetStatusResponse::variable_rows},
      {"distrt_ps_variable_bytes",
       "Bytes of variables held, optimizer slots included.",
       &ps::GetStatusResponse::variable_bytes},
      {"distrt_ps_hash_tables", "Hash embedding tables held.",
       &ps::GetStatusResponse::num_hash_tables},
      {"distrt_ps_hash_table_rows", "Rows of hash embedding tables held.",
       &ps::GetStatusResponse::hash_table_rows},
  };
  auto shared_holdings =
      std::make_shared<std::function<void(ps::GetStatusResponse*)>>(
          std::move(holdings));
  for (const auto& [name, help, field] : gauges) {
    RETURN_IF_ERROR(registry->AddCallbackGauge(
        name, help, [shared_holdings, field = field] {
          ps::GetStatusResponse status;
          (*shared_holdings)(&status);
          return static_cast<double>((status.*field)());
        }));
  }
  ASSIGN_OR_RETURN(
      Gauge * restored,
      registry->AddGauge(
          "distrt_ps_restored_from_checkpoint",
          "1 when this ps task took back its shard of a checkpoint at start "
          "(it was restarted), else 0."));
  restored->WithLabels({})->Set(restored_from_checkpoint ? 1 : 0);
  // A counter whose value lives in the request handler, read at scrape.
  RETURN_IF_ERROR(registry->AddCallbackGauge(
      "distrt_ps_duplicate_pushes",
      "Pushes received again (same request id) and not applied again.",
      [shared_holdings] {
        ps::GetStatusResponse status;
        (*shared_holdings)(&status);
        return static_cast<double>(status.duplicate_pushes());
      }));
  return metrics;
}

void PsServerMetrics::Record(int method, absl::Duration latency,
                             absl::StatusCode code, int64_t bytes_received,
                             int64_t bytes_sent) {
  if (method < 0 || method >= static_cast<int>(methods_.size())) return;
  MethodCells& cells = methods_[method];
  if (code == absl::StatusCode::kOk) {
    cells.ok_requests->Increment();
  } else {
    const std::string code_name = absl::StatusCodeToString(code);
    const absl::string_view labels[] = {cells.name, code_name};
    requests_->WithLabels(labels)->Increment();
  }
  cells.latency->Observe(absl::ToDoubleSeconds(latency));
  cells.received->Increment(static_cast<double>(bytes_received));
  cells.sent->Increment(static_cast<double>(bytes_sent));
}

}  // namespace distrt::rpc
