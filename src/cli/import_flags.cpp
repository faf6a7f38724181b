#include "planner/cli/import_flags.hpp"

#include <algorithm>
#include <charconv>

namespace planner::cli {

void ImportFlags::add_to(CLI::App& app) {
  app.add_option("--dim", dims, "Bind a symbolic dim: NAME=VALUE (repeatable)")->type_name("NAME=N");
  batch_opt = app.add_option("--batch", batch, "Bind the leading dim of every data input")->type_name("N");
  app.add_option("--params-from-inputs", params_from_inputs,
                 "Graph inputs that are trainable weights (glob; repeatable)")
      ->type_name("PATTERN");
}

Result<onnx::ImportOptions> ImportFlags::options() const {
  onnx::ImportOptions o;
  for (const auto& d : dims) {
    auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0)
      return make_error("--dim '{}': expected NAME=VALUE", d);
    std::int64_t v = 0;
    const char* first = d.data() + eq + 1;
    const char* last = d.data() + d.size();
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || ptr != last || first == last)
      return make_error("--dim '{}': value is not an integer", d);
    if (v <= 0) return make_error("--dim '{}': value must be positive", d);
    o.dims[d.substr(0, eq)] = v;
  }
  if (batch_opt && batch_opt->count() > 0) {
    if (batch <= 0) return make_error("--batch {}: must be positive", batch);
    o.batch = batch;
  }
  o.params_from_inputs = params_from_inputs;
  return o;
}

}  // namespace planner::cli
