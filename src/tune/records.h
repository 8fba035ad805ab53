// Tuning records: what a measured search chose, kept on disk so the next build of the same kernel
// (or the next choice among a node's algorithms) on the same machine measures nothing.
//
//   <cache_dir()>/tuning/<key[0:2]>/<key>.txt
//       ember-tuning 1
//       <kind> <the choice>         config <mc> <nc> <kc> <kernel> <split_k>  (a GEMM blocking)
//                                   algorithm <name>                          (a node's algorithm)
//       seconds <default> <best> <candidates>
//       about <what was measured, for people>
//
// The key is a SHA-256 over what was measured (a kernel's source; for an algorithm, the
// problem and every candidate's source), the search level and split-K mode, the symbol values
// it was measured at, the thread count, the ISA, the CPU's model name, the runtime headers and
// ember's version: anything that can change which candidate is fastest. Records are written
// aside and renamed into place; a damaged one (unreadable, of another kind, or holding a choice
// that is not a candidate) is ignored with a warning and replaced by the next measurement,
// never trusted.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ember/tune/tune.h"

namespace ember::tune {

struct Record {
  std::string kind;    // "config" or "algorithm"
  std::string choice;  // the rest of the kind's line
  double default_seconds = 0.0, best_seconds = 0.0;
  int candidates = 0;
};

// The text that keys records with what the measurement depends on besides the measured source.
std::string record_context(const TuneOptions& options, const std::vector<std::string>& symbols);

std::string record_key(const std::string& measured, const std::string& context);

// The record of `kind` under `key`, or nothing when there is none (silently) or it is damaged
// (with a warning).
std::optional<Record> read_record(const std::string& key, const std::string& kind);

// Warns that the record under `key` is damaged (`why`) and will be measured again.
void ignore_record(const std::string& key, const std::string& why);

void write_record(const std::string& key, const Record& record, const std::string& about);

// "model name" of the first CPU in /proc/cpuinfo ("unknown" elsewhere).
std::string cpu_model();

}  // namespace ember::tune
