// Explain's AST walk: follows the entry point into every function it calls, carrying which entry
// parameter each pointer derives from, and records loads, stores, loops and intrinsics. Constant
// `if`s are followed into the taken branch only, as the compiler does.
#include "spmvc/tooling/explain.hpp"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Expr.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Frontend/ASTUnit.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "nvrtc_compiler.hpp"
#include "spmvc/error.hpp"
#include "tooling/parse.hpp"

namespace spmvc::tooling {

namespace {

using clang::dyn_cast;
using clang::isa;

// Which entry parameter a pointer expression derives from (-1: none, e.g. a local array), and
// whether its offset depends on a loaded value.
struct Binding {
  int param = -1;
  bool gather = false;
};

struct Frame {
  std::map<const clang::VarDecl*, Binding> pointers;
  std::set<const clang::VarDecl*> row_derived;  // values computed from a row-pointer load
  bool per_nonzero = false;
  int depth = 0;
};

bool contains(const clang::Stmt* s, const std::function<bool(const clang::Stmt*)>& pred) {
  if (s == nullptr) return false;
  if (pred(s)) return true;
  for (const clang::Stmt* c : s->children()) {
    if (contains(c, pred)) return true;
  }
  return false;
}

class Walker {
 public:
  Walker(const clang::ASTContext& ctx, const clang::FunctionDecl& entry, ExplainReport& report)
      : ctx_(ctx), sm_(ctx.getSourceManager()), pp_(ctx.getLangOpts()), report_(report) {
    pp_.PrintCanonicalTypes = true;
    for (unsigned i = 0; i < entry.getNumParams(); ++i) params_.push_back(entry.getParamDecl(i));
  }

  void run(const clang::FunctionDecl& entry) {
    Frame frame;
    for (unsigned i = 0; i < entry.getNumParams(); ++i) {
      frame.pointers[entry.getParamDecl(i)] = Binding{static_cast<int>(i), false};
    }
    function_ = &entry;
    walk(entry.getBody(), frame, "");
  }

  std::set<int> stored, gathered, per_nonzero_loaded, per_row_loaded;

 private:
  std::string where(clang::SourceLocation loc) const {
    const clang::PresumedLoc p = sm_.getPresumedLoc(sm_.getExpansionLoc(loc));
    std::string file = p.isValid() ? p.getFilename() : "?";
    file = file.substr(file.find_last_of('/') + 1);
    std::string name = function_->getQualifiedNameAsString();
    if (name.rfind("spmvc::", 0) == 0) name = name.substr(7);
    return name + " (" + file + ":" + std::to_string(p.isValid() ? p.getLine() : 0) + ")";
  }

  Binding root(const clang::Expr* e, const Frame& f) const {
    e = e->IgnoreParenCasts();
    if (const auto* ref = dyn_cast<clang::DeclRefExpr>(e)) {
      if (const auto* v = dyn_cast<clang::VarDecl>(ref->getDecl())) {
        const auto it = f.pointers.find(v);
        if (it != f.pointers.end()) return it->second;
      }
      return {};
    }
    if (const auto* bin = dyn_cast<clang::BinaryOperator>(e)) {
      if (!bin->isAdditiveOp()) return {};
      const bool lhs_ptr = bin->getLHS()->getType()->isPointerType();
      Binding b = root(lhs_ptr ? bin->getLHS() : bin->getRHS(), f);
      const clang::Expr* offset = lhs_ptr ? bin->getRHS() : bin->getLHS();
      b.gather = b.gather || contains(offset, [](const clang::Stmt* s) {
                   return isa<clang::ArraySubscriptExpr>(s) || isa<clang::CallExpr>(s);
                 });
      return b;
    }
    if (const auto* un = dyn_cast<clang::UnaryOperator>(e)) {
      if (un->getOpcode() == clang::UO_AddrOf) return root(un->getSubExpr(), f);
    }
    if (const auto* sub = dyn_cast<clang::ArraySubscriptExpr>(e)) {
      return root(sub->getBase(), f);
    }
    return {};
  }

  bool row_derived(const clang::Stmt* s, const Frame& f) const {
    return contains(s, [&](const clang::Stmt* c) {
      if (const auto* ref = dyn_cast<clang::DeclRefExpr>(c)) {
        const auto* v = dyn_cast<clang::VarDecl>(ref->getDecl());
        return v != nullptr && f.row_derived.count(v) != 0;
      }
      // A load through an entry pointer outside any per-nonzero loop: the row pointer.
      if (const auto* sub = dyn_cast<clang::ArraySubscriptExpr>(c)) {
        return !f.per_nonzero && root(sub->getBase(), f).param >= 0;
      }
      return false;
    });
  }

  void access(const clang::Expr* address_or_lvalue, bool is_store, clang::QualType type,
              const Frame& f) {
    const Binding b = root(address_or_lvalue, f);
    if (b.param < 0) return;
    AccessSite site;
    site.array = params_[static_cast<std::size_t>(b.param)]->getName().str();
    site.store = is_store;
    site.element_type = type.getCanonicalType().getUnqualifiedType().getAsString(pp_);
    site.bytes = static_cast<int>(ctx_.getTypeSizeInChars(type).getQuantity());
    site.per_nonzero = f.per_nonzero;
    site.gather = b.gather;
    site.where = where(address_or_lvalue->getExprLoc());
    if (is_store) {
      stored.insert(b.param);
    } else if (b.gather) {
      gathered.insert(b.param);
    } else if (f.per_nonzero) {
      per_nonzero_loaded.insert(b.param);
    } else {
      per_row_loaded.insert(b.param);
    }
    const auto same = [&](const AccessSite& a) {
      return a.array == site.array && a.store == site.store && a.where == site.where &&
             a.element_type == site.element_type;
    };
    if (std::none_of(report_.accesses.begin(), report_.accesses.end(), same)) {
      report_.accesses.push_back(site);
    }
  }

  std::optional<std::int64_t> trip_count(const clang::ForStmt& s) const {
    const auto* init = dyn_cast_or_null<clang::DeclStmt>(s.getInit());
    if (init == nullptr || !init->isSingleDecl()) return std::nullopt;
    const auto* var = dyn_cast<clang::VarDecl>(init->getSingleDecl());
    clang::Expr::EvalResult r;
    if (var == nullptr || var->getInit() == nullptr || !var->getInit()->EvaluateAsInt(r, ctx_)) {
      return std::nullopt;
    }
    std::int64_t i = r.Val.getInt().getExtValue();
    const auto is_var = [&](const clang::Expr* e) {
      const auto* ref = dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts());
      return ref != nullptr && ref->getDecl() == var;
    };
    const auto* cond = dyn_cast_or_null<clang::BinaryOperator>(s.getCond());
    if (cond == nullptr || !cond->isComparisonOp() || !is_var(cond->getLHS()) ||
        !cond->getRHS()->EvaluateAsInt(r, ctx_)) {
      return std::nullopt;
    }
    const std::int64_t bound = r.Val.getInt().getExtValue();
    std::function<bool(std::int64_t)> test;
    switch (cond->getOpcode()) {
      case clang::BO_LT:
        test = [bound](std::int64_t v) { return v < bound; };
        break;
      case clang::BO_LE:
        test = [bound](std::int64_t v) { return v <= bound; };
        break;
      case clang::BO_GT:
        test = [bound](std::int64_t v) { return v > bound; };
        break;
      case clang::BO_GE:
        test = [bound](std::int64_t v) { return v >= bound; };
        break;
      case clang::BO_NE:
        test = [bound](std::int64_t v) { return v != bound; };
        break;
      default:
        return std::nullopt;
    }
    std::function<std::int64_t(std::int64_t)> step;
    if (const auto* un = dyn_cast_or_null<clang::UnaryOperator>(s.getInc())) {
      if (!is_var(un->getSubExpr()) || !un->isIncrementDecrementOp()) return std::nullopt;
      const std::int64_t d = un->isIncrementOp() ? 1 : -1;
      step = [d](std::int64_t v) { return v + d; };
    } else if (const auto* op = dyn_cast_or_null<clang::CompoundAssignOperator>(s.getInc())) {
      if (!is_var(op->getLHS()) || !op->getRHS()->EvaluateAsInt(r, ctx_)) return std::nullopt;
      const std::int64_t c = r.Val.getInt().getExtValue();
      switch (op->getOpcode()) {
        case clang::BO_AddAssign:
          step = [c](std::int64_t v) { return v + c; };
          break;
        case clang::BO_SubAssign:
          step = [c](std::int64_t v) { return v - c; };
          break;
        case clang::BO_MulAssign:
          step = [c](std::int64_t v) { return v * c; };
          break;
        case clang::BO_DivAssign:
          if (c == 0) return std::nullopt;
          step = [c](std::int64_t v) { return v / c; };
          break;
        case clang::BO_ShrAssign:
          step = [c](std::int64_t v) { return v >> c; };
          break;
        default:
          return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    std::int64_t n = 0;
    for (; test(i) && n < (1 << 20); ++n) i = step(i);
    return n < (1 << 20) ? std::optional<std::int64_t>(n) : std::nullopt;
  }

  void walk(const clang::Stmt* s, Frame& f, const std::string& unroll) {
    if (s == nullptr) return;
    if (const auto* attributed = dyn_cast<clang::AttributedStmt>(s)) {
      std::string pragma;
      for (const clang::Attr* a : attributed->getAttrs()) {
        if (const auto* hint = dyn_cast<clang::LoopHintAttr>(a)) {
          pragma = hint->getOption() == clang::LoopHintAttr::UnrollCount
                       ? "#pragma unroll " +
                             llvm::toString(hint->getValue()->EvaluateKnownConstInt(ctx_), 10)
                       : "#pragma unroll";
        }
      }
      walk(attributed->getSubStmt(), f, pragma);
      return;
    }
    if (const auto* loop = dyn_cast<clang::ForStmt>(s)) {
      walk(loop->getInit(), f, "");
      LoopSite site;
      site.where = where(loop->getForLoc());
      site.trip_count = trip_count(*loop);
      site.per_nonzero = !site.trip_count && row_derived(loop->getCond(), f);
      site.unroll = unroll;
      if (std::none_of(report_.loops.begin(), report_.loops.end(),
                       [&](const LoopSite& l) { return l.where == site.where; })) {
        report_.loops.push_back(site);
      }
      const bool outer = f.per_nonzero;
      f.per_nonzero = outer || site.per_nonzero;
      walk(loop->getCond(), f, "");
      walk(loop->getInc(), f, "");
      walk(loop->getBody(), f, "");
      f.per_nonzero = outer;
      return;
    }
    if (const auto* ifs = dyn_cast<clang::IfStmt>(s)) {
      const clang::Expr* cond = ifs->getCond();
      if (!cond->isValueDependent() && cond->isIntegerConstantExpr(ctx_)) {
        walk(cond->EvaluateKnownConstInt(ctx_).getBoolValue() ? ifs->getThen() : ifs->getElse(), f,
             "");
        return;
      }
    }
    if (const auto* decl = dyn_cast<clang::DeclStmt>(s)) {
      for (const clang::Decl* d : decl->decls()) {
        const auto* v = dyn_cast<clang::VarDecl>(d);
        if (v == nullptr) continue;
        if (v->hasAttr<clang::CUDASharedAttr>()) {
          report_.shared.push_back(
              {v->getName().str(), ctx_.getTypeSizeInChars(v->getType()).getQuantity()});
        }
        if (const clang::Expr* init = v->getInit()) {
          walk(init, f, "");
          if (v->getType()->isPointerType()) f.pointers[v] = root(init, f);
          if (!v->getType()->isPointerType() && row_derived(init, f)) f.row_derived.insert(v);
        }
      }
      return;
    }
    if (const auto* bin = dyn_cast<clang::BinaryOperator>(s);
        bin != nullptr && bin->isAssignmentOp()) {
      const clang::Expr* lhs = bin->getLHS()->IgnoreParens();
      if (isa<clang::ArraySubscriptExpr>(lhs) ||
          (isa<clang::UnaryOperator>(lhs) &&
           dyn_cast<clang::UnaryOperator>(lhs)->getOpcode() == clang::UO_Deref)) {
        if (bin->isCompoundAssignmentOp()) access(lhs, false, lhs->getType(), f);
        access(lhs, true, lhs->getType(), f);
        walk_children_of_lvalue(lhs, f);
        walk(bin->getRHS(), f, "");
        return;
      }
    }
    if (const auto* cast = dyn_cast<clang::ImplicitCastExpr>(s);
        cast != nullptr && cast->getCastKind() == clang::CK_LValueToRValue) {
      const clang::Expr* sub = cast->getSubExpr()->IgnoreParens();
      if (isa<clang::ArraySubscriptExpr>(sub)) access(sub, false, sub->getType(), f);
    }
    if (const auto* call = dyn_cast<clang::CallExpr>(s)) {
      if (handle_call(*call, f)) return;
    }
    for (const clang::Stmt* c : s->children()) walk(c, f, "");
  }

  void walk_children_of_lvalue(const clang::Expr* lhs, Frame& f) {
    for (const clang::Stmt* c : lhs->children()) walk(c, f, "");
  }

  // Intrinsics are counted; calls into functions with bodies are followed with their parameters
  // bound to what the arguments derive from.
  bool handle_call(const clang::CallExpr& call, Frame& f) {
    const clang::FunctionDecl* callee = call.getDirectCallee();
    if (callee == nullptr) return false;
    const std::string name = callee->getNameAsString();
    for (const clang::Expr* arg : call.arguments()) walk(arg, f, "");
    if (name == "__ldg" && call.getNumArgs() == 1) {
      access(call.getArg(0), false, call.getType(), f);
      return true;
    }
    if (name.rfind("atomic", 0) == 0) {
      ++report_.atomics;
      if (call.getNumArgs() > 0) {
        access(call.getArg(0), true, call.getArg(0)->getType()->getPointeeType(), f);
      }
      return true;
    }
    if (name.rfind("__shfl", 0) == 0) {
      ++report_.shuffles;
      return true;
    }
    const clang::FunctionDecl* def = callee->getDefinition();
    if (def == nullptr || sm_.isInSystemHeader(def->getLocation()) || f.depth > 32) return true;
    Frame inner;
    inner.per_nonzero = f.per_nonzero;
    inner.depth = f.depth + 1;
    for (unsigned i = 0; i < def->getNumParams() && i < call.getNumArgs(); ++i) {
      const clang::ParmVarDecl* p = def->getParamDecl(i);
      inner.pointers[p] = root(call.getArg(i), f);
      if (row_derived(call.getArg(i), f)) inner.row_derived.insert(p);
    }
    const clang::FunctionDecl* caller = function_;
    function_ = def;
    walk(def->getBody(), inner, "");
    function_ = caller;
    return true;
  }

  const clang::ASTContext& ctx_;
  const clang::SourceManager& sm_;
  clang::PrintingPolicy pp_;
  ExplainReport& report_;
  std::vector<const clang::ParmVarDecl*> params_;
  const clang::FunctionDecl* function_ = nullptr;
};

std::string role_of(const clang::ParmVarDecl& p, int index, const Walker& w) {
  const clang::QualType t = p.getType();
  const std::string name = p.getName().str();
  if (!t->isPointerType()) {
    if (t->isIntegerType()) return "row count";
    if (name == "alpha") return "scalar alpha (scales A*x)";
    if (name == "beta") return "scalar beta (scales y; y is not read when it is 0)";
    return "scalar";
  }
  const bool element_int = t->getPointeeType()->isIntegerType();
  if (w.stored.count(index) != 0) return "y (output vector, written)";
  if (w.gathered.count(index) != 0) return "x (input vector, gathered by column index)";
  if (w.per_nonzero_loaded.count(index) != 0) {
    return element_int ? "column indices (matrix, read per nonzero)"
                       : "values (matrix, read per nonzero)";
  }
  if (w.per_row_loaded.count(index) != 0) return "row pointer (matrix, read per row)";
  // Coded values (templates/common.cuh) reach the template inside an accessor object, whose
  // member loads this walk does not follow: named by the generator's convention instead.
  const bool ends_table = name.size() >= 6 && name.compare(name.size() - 6, 6, "_table") == 0;
  if (ends_table) return "value table (coded values; reads not traced)";
  if (element_int && name.find("values") != std::string::npos)
    return "value codes (table indices, read per nonzero; reads not traced)";
  return "unused";
}

int parse_smem(const std::string& log) {
  std::smatch m;
  static const std::regex re(R"((\d+) bytes smem)");
  return std::regex_search(log, m, re) ? std::stoi(m[1].str()) : 0;
}

}  // namespace

ExplainReport explain(const KernelSource& src, const ExplainOptions& options) {
  const std::unique_ptr<clang::ASTUnit> ast = detail::parse_cuda(src, options.include_dirs);
  const clang::ASTContext& ctx = ast->getASTContext();
  const clang::FunctionDecl& entry = detail::find_entry(*ast, src);

  ExplainReport r;
  r.kernel_name = entry.getNameAsString();
  if (const auto* bounds = entry.getAttr<clang::CUDALaunchBoundsAttr>()) {
    r.launch_bounds =
        static_cast<int>(bounds->getMaxThreads()->EvaluateKnownConstInt(ctx).getExtValue());
  }
  Walker walker(ctx, entry, r);
  walker.run(entry);

  clang::PrintingPolicy pp(ctx.getLangOpts());
  pp.PrintCanonicalTypes = true;
  for (unsigned i = 0; i < entry.getNumParams(); ++i) {
    const clang::ParmVarDecl* p = entry.getParamDecl(i);
    r.params.push_back({p->getName().str(), p->getType().getAsString(pp),
                        role_of(*p, static_cast<int>(i), walker)});
    if (!p->getType()->isPointerType()) continue;
    const double elem =
        static_cast<double>(ctx.getTypeSizeInChars(p->getType()->getPointeeType()).getQuantity());
    const int index = static_cast<int>(i);
    if (walker.stored.count(index) != 0 || walker.gathered.count(index) != 0) continue;
    if (walker.per_nonzero_loaded.count(index) != 0) {
      r.nonzero_bytes += elem;
    } else if (walker.per_row_loaded.count(index) != 0) {
      r.row_bytes += elem;
    }
  }
  r.shape = options.shape;

  if (!options.arch.empty()) {
    KernelSource compiled = src;
    if (compiled.kernel_name.empty()) compiled.kernel_name = r.kernel_name;
    for (const auto& dir : options.include_dirs) compiled.options.push_back("-I" + dir);
    const runtime::Cubin cubin = runtime::compile_cubin(compiled, options.arch);
    r.resources = Resources{options.arch,           cubin.registers,   cubin.spill_store_bytes,
                            cubin.spill_load_bytes, cubin.stack_bytes, parse_smem(cubin.log)};
  }
  return r;
}

double ExplainReport::matrix_bytes_per_nonzero() const {
  if (!shape || shape->nnz == 0) return nonzero_bytes;
  return (row_bytes * static_cast<double>(shape->nrows + 1) +
          nonzero_bytes * static_cast<double>(shape->stored_nnz)) /
         static_cast<double>(shape->nnz);
}

}  // namespace spmvc::tooling
