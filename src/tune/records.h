// Tuning records: what a measured search chose, kept on disk so the next build of the same kernel
// on the same machine measures nothing.
//
//   <cache_dir()>/tuning/<key[0:2]>/<key>.txt
//       ember-tuning 1
//       config <mc> <nc> <kc> <kernel> <split_k>
//       seconds <default> <best> <candidates>
//       kernel <the task's name and its M x N x K, for people>
//
// The key is a SHA-256 over the kernel's source, the search level and split-K mode, the symbol
// values it was measured at, the thread count, the ISA, the CPU's model name, the runtime headers
// and ember's version: anything that can change which candidate is fastest. Records are written
// aside and renamed into place; an unreadable or malformed one is ignored (and replaced by the next
// measurement), never trusted.
#pragma once

#include <optional>
#include <string>

#include "ember/tune/tune.h"

namespace ember::tune {

std::string record_key(const std::string& kernel_source, const std::string& context);

// The recorded result, or nothing when there is no well-formed record.
std::optional<TuneResult> read_record(const std::string& key);

void write_record(const std::string& key, const TuneResult& result, const std::string& about);

// "model name" of the first CPU in /proc/cpuinfo ("unknown" elsewhere).
std::string cpu_model();

}  // namespace ember::tune
