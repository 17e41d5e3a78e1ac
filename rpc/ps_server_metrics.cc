#include "rpc/ps_server_metrics.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "runtime/util/status_macros.h"

namespace distrt::rpc {
namespace {

// The per-table families, their values copied from a GetStatusResponse's
// hash_tables by a scrape hook, just before each exposition: the tables keep
// the values.
class TableMetrics {
 public:
  static absl::StatusOr<std::shared_ptr<TableMetrics>> Create(
      MetricsRegistry* registry) {
    auto m = std::make_shared<TableMetrics>();
    const std::vector<std::string> table = {"table"};
    ASSIGN_OR_RETURN(
        m->rows_,
        registry->AddGauge("distrt_ps_table_rows",
                           "Rows held, by hash embedding table.", table));
    ASSIGN_OR_RETURN(
        m->admitted_,
        registry->AddCounter(
            "distrt_ps_table_admitted_total",
            "Rows created (ids admitted), by hash embedding table.", table));
    ASSIGN_OR_RETURN(
        m->evicted_,
        registry->AddCounter("distrt_ps_table_evicted_total",
                             "Rows evicted, by hash embedding table and "
                             "reason (ttl: not updated for ttl_steps global "
                             "steps; capacity: over max_rows).",
                             {"table", "reason"}));
    ASSIGN_OR_RETURN(
        m->unknown_lookups_,
        registry->AddCounter("distrt_ps_table_unknown_lookups_total",
                             "Pulled ids without a row that were not "
                             "admitted (they got the unknown row), by hash "
                             "embedding table.",
                             table));
    ASSIGN_OR_RETURN(
        m->dropped_pushes_,
        registry->AddCounter("distrt_ps_table_dropped_pushes_total",
                             "Pushed ids dropped for having no row (not "
                             "admitted), by hash embedding table.",
                             table));
    ASSIGN_OR_RETURN(
        m->clock_,
        registry->AddGauge("distrt_ps_table_clock",
                           "The global step a hash embedding table ages its "
                           "rows by (the latest a push reported).",
                           table));
    return m;
  }

  void Refresh(const ps::GetStatusResponse& status) {
    // Concurrent scrapes must not both add the same increase.
    absl::MutexLock lock(&mu_);
    for (const ps::HashTableInfo& info : status.hash_tables()) {
      const absl::string_view name = info.spec().name();
      const absl::string_view table[] = {name};
      rows_->WithLabels(table)->Set(static_cast<double>(info.num_rows()));
      clock_->WithLabels(table)->Set(static_cast<double>(info.clock()));
      RaiseTo(admitted_->WithLabels(table), info.admitted());
      const absl::string_view ttl[] = {name, "ttl"};
      const absl::string_view capacity[] = {name, "capacity"};
      RaiseTo(evicted_->WithLabels(ttl), info.evicted_by_ttl());
      RaiseTo(evicted_->WithLabels(capacity), info.evicted_by_capacity());
      RaiseTo(unknown_lookups_->WithLabels(table), info.unknown_lookups());
      RaiseTo(dropped_pushes_->WithLabels(table), info.dropped_pushes());
    }
  }

 private:
  // The tables' counters only grow (a restore keeps them), and only Refresh
  // changes these cells: the difference is what happened since the last
  // scrape.
  void RaiseTo(CounterCell* cell, int64_t value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const double delta = static_cast<double>(value) - cell->value();
    if (delta > 0) cell->Increment(delta);
  }

  absl::Mutex mu_;
  // Owned by the registry, which never removes a family.
  Gauge* rows_ = nullptr;
  Counter* admitted_ = nullptr;
  Counter* evicted_ = nullptr;
  Counter* unknown_lookups_ = nullptr;
  Counter* dropped_pushes_ = nullptr;
  Gauge* clock_ = nullptr;
};

// What the task holds, read once per scrape by a hook: the gauges below and
// the per-table families all show the same instant.
class HoldingsSnapshot {
 public:
  void Set(ps::GetStatusResponse status) {
    absl::MutexLock lock(&mu_);
    status_ = std::move(status);
  }
  template <typename Field>
  double Get(Field field) const {
    absl::MutexLock lock(&mu_);
    return static_cast<double>((status_.*field)());
  }

 private:
  mutable absl::Mutex mu_;
  ps::GetStatusResponse status_ ABSL_GUARDED_BY(mu_);
};

// The gauges of what the task holds (`holdings` fills a GetStatusResponse's
// holdings) and the per-table families.
absl::Status AddHoldingsMetrics(
    MetricsRegistry* registry,
    std::function<void(ps::GetStatusResponse*)> holdings) {
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
      // A counter whose value lives in the request handler.
      {"distrt_ps_duplicate_pushes",
       "Pushes received again (same request id) and not applied again.",
       &ps::GetStatusResponse::duplicate_pushes},
  };
  auto snapshot = std::make_shared<HoldingsSnapshot>();
  ASSIGN_OR_RETURN(std::shared_ptr<TableMetrics> tables,
                   TableMetrics::Create(registry));
  registry->AddScrapeHook([holdings = std::move(holdings), snapshot, tables] {
    ps::GetStatusResponse status;
    holdings(&status);
    tables->Refresh(status);
    snapshot->Set(std::move(status));
  });
  for (const auto& [name, help, field] : gauges) {
    RETURN_IF_ERROR(registry->AddCallbackGauge(
        name, help,
        [snapshot, field = field] { return snapshot->Get(field); }));
  }
  return absl::OkStatus();
}

}  // namespace

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

  RETURN_IF_ERROR(AddHoldingsMetrics(registry, std::move(holdings)));
  ASSIGN_OR_RETURN(
      Gauge * restored,
      registry->AddGauge(
          "distrt_ps_restored_from_checkpoint",
          "1 when this ps task took back its shard of a checkpoint at start "
          "(it was restarted), else 0."));
  restored->WithLabels({})->Set(restored_from_checkpoint ? 1 : 0);
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
