// The sections of a saved model (artifact.cpp) that annotate its plan: per launch its
// costs, per value its layout where not plain, and the memory values share. Each has a
// writer (the section's bytes) and a reader, which fills in a plan already read from the
// "plan" section and fails (ArtifactError) on any record it cannot use.
//
// Private to the runtime (src/runtime).
#pragma once

#include <string>

#include "artifact_file.h"
#include "ember/runtime/compiled_graph.h"

namespace ember::artifact_plan {

// "costs": per launch, its flops and bytes as size expressions of the plan's symbols ("" when
// unknown). read_costs needs the launches and the symbols.
std::string costs_section(const ExecPlan& p);
void read_costs(artifact_file::Reader r, ExecPlan* plan);

// "layouts" (format version 5): the values whose layout is not plain: value, kind, block.
// read_layouts needs the values.
std::string layouts_section(const ExecPlan& p);
void read_layouts(artifact_file::Reader r, ExecPlan* plan);

// "aliases" (format version 6): the views (view, base), then the launches whose output may
// take an input's memory (launch, that input's place). read_aliases needs the values and
// the launches.
std::string aliases_section(const ExecPlan& p);
void read_aliases(artifact_file::Reader r, ExecPlan* plan);

}  // namespace ember::artifact_plan
