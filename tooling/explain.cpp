// Explain's AST walk: follows the entry point into every function it calls, carrying which entry
// parameter each pointer derives from, and records loads, stores, loops and intrinsics. Constant
// `if`s are followed into the taken branch only, as the compiler does.
#include "spmvc/tooling/explain.hpp"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Frontend/ASTUnit.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

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
  /// A second parameter the address may point into (-1: none): x read in two parts
  /// (spmvc::SplitX), whose `x + c` is the caller's x or the gathered hubs.
  int also = -1;
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

// A value read from memory (an array element, a load or a column reader's call), as opposed
// to arithmetic on indices and CUDA's built-in variables (whose getters are calls too).
bool is_loaded_value(const clang::Stmt* s) {
  if (isa<clang::ArraySubscriptExpr>(s)) return true;
  const auto* call = dyn_cast<clang::CallExpr>(s);
  if (call == nullptr) return false;
  const clang::FunctionDecl* callee = call->getDirectCallee();
  if (callee == nullptr) return true;
  const clang::SourceManager& sm = callee->getASTContext().getSourceManager();
  return !sm.isInSystemHeader(callee->getLocation()) && !callee->getReturnType()->isVoidType();
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
        // A namespace-scope pointer the runtime sets (the row map's spmvc_row_map).
        const auto g = globals_.find(v->getName().str());
        if (v->hasGlobalStorage() && v->getType()->isPointerType() && g != globals_.end())
          return Binding{g->second, false};
      }
      return {};
    }
    if (const auto* bin = dyn_cast<clang::BinaryOperator>(e)) {
      if (!bin->isAdditiveOp()) return {};
      const bool lhs_ptr = bin->getLHS()->getType()->isPointerType();
      Binding b = root(lhs_ptr ? bin->getLHS() : bin->getRHS(), f);
      const clang::Expr* offset = lhs_ptr ? bin->getRHS() : bin->getLHS();
      b.gather = b.gather || contains(offset, is_loaded_value);
      return b;
    }
    if (const auto* un = dyn_cast<clang::UnaryOperator>(e)) {
      if (un->getOpcode() == clang::UO_AddrOf) return root(un->getSubExpr(), f);
    }
    if (const auto* sub = dyn_cast<clang::ArraySubscriptExpr>(e)) {
      return root(sub->getBase(), f);
    }
    // A pointer held in a struct (a value accessor, a column reader, a tile's x): what the field
    // was initialised from, wherever that was.
    if (const auto* member = dyn_cast<clang::MemberExpr>(e)) {
      if (const auto* field = dyn_cast<clang::FieldDecl>(member->getMemberDecl())) {
        const auto it = fields_.find(field);
        if (it != fields_.end()) return it->second;
      }
      return {};
    }
    // `values + k` on a value accessor (templates/common.cuh): the accessor's own pointers.
    if (const auto* op = dyn_cast<clang::CXXOperatorCallExpr>(e)) {
      if (op->getOperator() == clang::OO_Plus && op->getNumArgs() == 2) {
        Binding b = root(op->getArg(0), f);
        if (b.param < 0) b = field_pointers(op->getArg(0)->getType());
        b.gather = b.gather || contains(op->getArg(1), is_loaded_value);
        return b;
      }
      return {};
    }
    return {};
  }

  // An object whose `+` gives a pointer into one of its pointer fields (spmvc::SplitX): the
  // parameters its bound fields came from, the first and the second.
  Binding field_pointers(clang::QualType type) const {
    Binding b;
    const clang::CXXRecordDecl* record = type->getAsCXXRecordDecl();
    if (record == nullptr) return b;
    for (const clang::FieldDecl* field : record->fields()) {
      if (!field->getType()->isPointerType()) continue;
      const auto it = fields_.find(field);
      if (it == fields_.end() || it->second.param < 0) continue;
      if (b.param < 0) {
        b.param = it->second.param;
      } else if (b.also < 0 && it->second.param != b.param) {
        b.also = it->second.param;
      }
    }
    return b;
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
    Binding b = root(address_or_lvalue, f);
    if (b.param < 0) return;
    if (b.also >= 0) {
      Binding other = b;
      other.param = b.also;
      other.also = -1;
      record_access(other, address_or_lvalue, is_store, type, f);
    }
    b.also = -1;
    record_access(b, address_or_lvalue, is_store, type, f);
  }

  void record_access(const Binding& b, const clang::Expr* address_or_lvalue, bool is_store,
                     clang::QualType type, const Frame& f) {
    AccessSite site;
    site.array = array_name(b.param);
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
        if (v == nullptr || v->isConstexpr()) continue;  // folded: nothing runs
        if (v->hasAttr<clang::CUDASharedAttr>()) {
          report_.shared.push_back(
              {v->getName().str(), ctx_.getTypeSizeInChars(v->getType()).getQuantity()});
        }
        if (const clang::Expr* init = v->getInit()) {
          walk(init, f, "");
          if (v->getType()->isPointerType() || v->getType()->isRecordType())
            f.pointers[v] = root(init, f);
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
    if (const auto* construct = dyn_cast<clang::CXXConstructExpr>(s)) {
      if (handle_construct(*construct, f)) return;
    }
    if (const auto* init = dyn_cast<clang::InitListExpr>(s)) {
      // Aggregate initialisation of a struct: each field takes what its initialiser derives from.
      const clang::InitListExpr* semantic = init->isSemanticForm() ? init : init->getSemanticForm();
      if (semantic != nullptr) {
        if (const clang::RecordDecl* record = semantic->getType()->getAsRecordDecl()) {
          unsigned i = 0;
          for (const clang::FieldDecl* field : record->fields()) {
            if (i >= semantic->getNumInits()) break;
            const Binding b = root(semantic->getInit(i++), f);
            if (b.param >= 0) fields_[field] = b;
          }
        }
      }
    }
    for (const clang::Stmt* c : s->children()) walk(c, f, "");
  }

  // A user-written constructor (SymbolStream's, which loads the first symbol): its parameters
  // bound to the arguments, its member initialisers walked and their fields bound.
  bool handle_construct(const clang::CXXConstructExpr& e, Frame& f) {
    const clang::CXXConstructorDecl* ctor = e.getConstructor();
    const clang::FunctionDecl* def = ctor != nullptr ? ctor->getDefinition() : nullptr;
    if (def == nullptr || !ctor->isUserProvided() || f.depth > 32) return false;
    for (const clang::Expr* arg : e.arguments()) walk(arg, f, "");
    Frame inner;
    inner.per_nonzero = f.per_nonzero;
    inner.depth = f.depth + 1;
    for (unsigned i = 0; i < def->getNumParams() && i < e.getNumArgs(); ++i) {
      inner.pointers[def->getParamDecl(i)] = root(e.getArg(i), f);
      if (row_derived(e.getArg(i), f)) inner.row_derived.insert(def->getParamDecl(i));
    }
    const clang::FunctionDecl* caller = function_;
    function_ = def;
    for (const clang::CXXCtorInitializer* init : cast<clang::CXXConstructorDecl>(def)->inits()) {
      if (!init->isWritten() || !init->isMemberInitializer()) continue;
      walk(init->getInit(), inner, "");
      const Binding b = root(init->getInit(), inner);
      if (b.param >= 0) fields_[init->getMember()] = b;
    }
    walk(def->getBody(), inner, "");
    function_ = caller;
    return true;
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
    if ((name == "__ldg" || name == "__ldcs") && call.getNumArgs() == 1) {
      access(call.getArg(0), false, call.getType(), f);
      return true;
    }
    if (name == "__stcs" && call.getNumArgs() == 2) {  // a store, evict-first
      access(call.getArg(0), true, call.getArg(0)->getType()->getPointeeType(), f);
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
    // A member operator's first argument is the object, not a parameter.
    const unsigned skip =
        isa<clang::CXXOperatorCallExpr>(call) && isa<clang::CXXMethodDecl>(def) ? 1 : 0;
    for (unsigned i = 0; i < def->getNumParams() && i + skip < call.getNumArgs(); ++i) {
      const clang::ParmVarDecl* p = def->getParamDecl(i);
      inner.pointers[p] = root(call.getArg(i + skip), f);
      if (row_derived(call.getArg(i + skip), f)) inner.row_derived.insert(p);
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
  std::map<const clang::FieldDecl*, Binding> fields_;
  std::map<std::string, int> globals_;  // namespace-scope pointers, as pseudo-parameters

 public:
  /// Names of the pseudo-parameters past the entry's own: namespace-scope pointers it reads.
  std::vector<std::string> global_names;
  /// Treats loads through the namespace-scope pointer `name` as loads of a parameter.
  void track_global(const std::string& name) {
    globals_[name] = static_cast<int>(params_.size() + global_names.size());
    global_names.push_back(name);
  }
  std::string array_name(int index) const {
    const auto i = static_cast<std::size_t>(index);
    return i < params_.size() ? params_[i]->getName().str() : global_names[i - params_.size()];
  }
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
  return "unused";
}

// What an encoded array is, by the names the formats give them (compiler/formats/).
std::string array_label(const std::string& name) {
  static const std::map<std::string, std::string> labels = {
      {"row_ptr", "row pointer"},
      {"col_idx", "column indices"},
      {"values", "values"},
      {"values_table", "value table (the values' codes index it)"},
      {"row_lengths", "row lengths"},
      {"slice_ptr", "slice offsets"},
      {"perm", "row permutation"},
      {"row_blocks", "row blocks (first row of each thread block)"},
      {"col_base", "per-block base column of the 16-bit columns"},
      {"col16", "16-bit column offsets"},
      {"col_wide", "32-bit columns of wide blocks"},
      {"col_ptr", "slice column offsets"},
      {"sym_ptr", "slice symbol offsets"},
      {"widths", "bit widths of the delta fields"},
      {"symbols", "delta-coded column symbols"},
      {"count", "entry count"},
      {"row_base", "first row of each interval"},
      {"cstart", "first column of each slice"},
      {"codes", "compressed column codes"},
      {"decode_table", "decode table"},
      {"row_map", "row map (y row of each computed row)"},
      {"col_map", "column map (x gather order)"},
      {"col_slot", "place in x_perm of each gathered column (the columns read)"},
      {"x_perm", "x in the reordered column order (workspace)"},
      {"x_hub", "x's hub columns, gathered before the multiply (workspace)"},
      {"coo_row", "COO row indices"},
      {"coo_base", "first COO row of each interval (or its place among the wide rows)"},
      {"coo_row16", "16-bit COO rows, from their interval's first"},
      {"coo_row_wide", "32-bit COO rows of the intervals that span 2^16 rows or more"},
      {"coo_col", "COO column indices"},
      {"brow_ptr", "block-row offsets"},
      {"bcol", "block columns"},
      {"block_col", "block start columns"},
      {"block_len", "block lengths"},
      {"brow_val", "block-row value offsets"},
      {"chunk_len", "chunk lengths"},
      {"chunk_start", "chunk starts"},
      {"perm_offset", "permutation offsets"},
      {"col", "column indices within the segment"},
      {"slot", "reduction slots"},
      {"red_ptr", "reduction offsets"},
      {"partial", "partial sums (workspace)"},
  };
  std::string base = name;
  for (const char* prefix : {"ell_", "coo_"}) {
    if (base.rfind(prefix, 0) == 0 && labels.count(base) == 0) base = base.substr(4);
  }
  const auto it = labels.find(base);
  std::string label = it != labels.end() ? it->second : "array";
  if (base != name)
    label = std::string(name.substr(0, 3) == "ell" ? "ELL part: " : "COO part: ") + label;
  return label;
}

// The role of parameter `index`, whose place in the unit's launch is `kp`: what codegen bound it
// to, and what the kernel's code does with it.
std::string role_of(const KernelParam& kp, int index, const Walker& w) {
  const bool read =
      w.gathered.count(index) + w.per_nonzero_loaded.count(index) + w.per_row_loaded.count(index) !=
      0;
  const bool written = w.stored.count(index) != 0;
  switch (kp.kind) {
    case KernelParam::Kind::rows:
      return "row count";
    case KernelParam::Kind::cols:
      return "column count";
    case KernelParam::Kind::alpha:
      return "scalar alpha (scales A*x)";
    case KernelParam::Kind::beta:
      return "scalar beta (scales y; y is not read when it is 0)";
    case KernelParam::Kind::x:
      return read ? "x (input vector, gathered by column index)"
                  : "x (input vector, not read by this kernel)";
    case KernelParam::Kind::y:
      if (!written) return read ? "y (output vector, read)" : "y (output vector, not written)";
      return read ? "y (output vector, written; read when beta != 0 or to add to it)"
                  : "y (output vector, written)";
    case KernelParam::Kind::array:
      break;
  }
  std::string access;
  if (written) {
    access = read ? "read and written" : "written";
  } else if (w.gathered.count(index) != 0) {
    access = "read at loaded offsets";
  } else if (w.per_nonzero_loaded.count(index) != 0) {
    access = "read per nonzero";
  } else if (w.per_row_loaded.count(index) != 0) {
    access = "read";
  } else {
    access = "not read by this kernel";
  }
  return fmt::format("{} (array {}, {})", array_label(kp.name), kp.name, access);
}

// A kernel read from disk has no launch list: its parameters are named the way codegen's
// entry_signature names them (nrows, ncols, x, y, alpha, beta, each array after its encoded
// array), and that convention gives the same list back.
std::vector<KernelParam> params_by_name(const clang::FunctionDecl& entry) {
  std::vector<KernelParam> params;
  for (const clang::ParmVarDecl* p : entry.parameters()) {
    const std::string name = p->getName().str();
    using Kind = KernelParam::Kind;
    Kind kind = Kind::array;
    if (name == "nrows") {
      kind = Kind::rows;
    } else if (name == "ncols") {
      kind = Kind::cols;
    } else if (name == "x") {
      kind = Kind::x;
    } else if (name == "y") {
      kind = Kind::y;
    } else if (name == "alpha") {
      kind = Kind::alpha;
    } else if (name == "beta") {
      kind = Kind::beta;
    } else if (!p->getType()->isPointerType()) {
      return {};  // not a generated kernel: roles from the uses alone
    }
    params.push_back({kind, name});
  }
  return params;
}

int parse_smem(const std::string& log) {
  std::smatch m;
  static const std::regex re(R"((\d+) bytes smem)");
  return std::regex_search(log, m, re) ? std::stoi(m[1].str()) : 0;
}

// One kernel: `params` is its launch's parameter list (empty for a file from disk).
ExplainReport explain_kernel(const clang::ASTContext& ctx, const clang::FunctionDecl& entry,
                             const std::vector<KernelParam>& params, const ExplainOptions& options,
                             std::vector<std::pair<std::string, int>>& array_uses) {
  ExplainReport r;
  r.kernel_name = entry.getNameAsString();
  if (const auto* bounds = entry.getAttr<clang::CUDALaunchBoundsAttr>()) {
    r.launch_bounds =
        static_cast<int>(bounds->getMaxThreads()->EvaluateKnownConstInt(ctx).getExtValue());
  }
  Walker walker(ctx, entry, r);
  walker.track_global("spmvc_row_map");
  walker.run(entry);

  clang::PrintingPolicy pp(ctx.getLangOpts());
  pp.PrintCanonicalTypes = true;
  const bool from_unit = params.size() == entry.getNumParams();
  for (unsigned i = 0; i < entry.getNumParams(); ++i) {
    const clang::ParmVarDecl* p = entry.getParamDecl(i);
    const int index = static_cast<int>(i);
    r.params.push_back(
        {p->getName().str(), p->getType().getAsString(pp),
         from_unit ? role_of(params[i], index, walker) : role_of(*p, index, walker)});
    if (from_unit && params[i].kind == KernelParam::Kind::array) {
      // 1: read, 2: written
      const int use = (walker.gathered.count(index) + walker.per_nonzero_loaded.count(index) +
                                   walker.per_row_loaded.count(index) !=
                               0
                           ? 1
                           : 0) |
                      (walker.stored.count(index) != 0 ? 2 : 0);
      array_uses.emplace_back(params[i].name, use);
    }
    if (!p->getType()->isPointerType()) continue;
    const double elem =
        static_cast<double>(ctx.getTypeSizeInChars(p->getType()->getPointeeType()).getQuantity());
    if (walker.stored.count(index) != 0 || walker.gathered.count(index) != 0) continue;
    if (from_unit && params[i].kind != KernelParam::Kind::array) continue;
    if (walker.per_nonzero_loaded.count(index) != 0) {
      r.nonzero_bytes += elem;
    } else if (walker.per_row_loaded.count(index) != 0) {
      r.row_bytes += elem;
    }
  }
  // The row map is read through a namespace-scope pointer the runtime sets.
  const int row_map = static_cast<int>(entry.getNumParams());
  if (walker.per_row_loaded.count(row_map) + walker.per_nonzero_loaded.count(row_map) != 0)
    array_uses.emplace_back("row_map", 1);
  r.shape = options.shape;
  return r;
}

// A namespace-scope array's initialiser, as values.
std::string initializer_values(const clang::ASTContext& ctx, const clang::Expr* init) {
  const auto* list = dyn_cast_or_null<clang::InitListExpr>(init);
  if (list == nullptr) return "";
  std::vector<std::string> values;
  for (const clang::Expr* e : list->inits()) {
    clang::Expr::EvalResult v;
    if (const auto* inner = dyn_cast<clang::InitListExpr>(e)) {
      std::string fields = "{" + initializer_values(ctx, inner) + "}";
      values.push_back(fields);
    } else if (e->EvaluateAsInt(v, ctx)) {
      values.push_back(llvm::toString(v.Val.getInt(), 10));
    } else {
      values.push_back("?");
    }
  }
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values.size() > 24 && i == 12) {
      out += fmt::format("... ({} more) ..., ", values.size() - 24);
      i = values.size() - 12;
    }
    out += values[i] + (i + 1 < values.size() ? ", " : "");
  }
  return out;
}

// Data the unit's own file bakes in: __constant__ and constexpr arrays, and width patterns
// passed to the templates as arguments (`using Pattern = WidthPattern<...>`).
std::vector<BakedData> baked_data(clang::ASTUnit& ast) {
  const clang::ASTContext& ctx = ast.getASTContext();
  const clang::SourceManager& sm = ctx.getSourceManager();
  clang::PrintingPolicy pp(ctx.getLangOpts());
  pp.PrintCanonicalTypes = true;
  std::vector<BakedData> out;
  std::function<void(const clang::DeclContext*)> scan = [&](const clang::DeclContext* dc) {
    for (const clang::Decl* d : dc->decls()) {
      if (!sm.isWrittenInMainFile(sm.getExpansionLoc(d->getLocation()))) continue;
      if (const auto* ns = dyn_cast<clang::NamespaceDecl>(d)) {
        scan(ns);
      } else if (const auto* v = dyn_cast<clang::VarDecl>(d)) {
        if (!v->getType()->isArrayType() || v->getInit() == nullptr) continue;
        std::string what = v->getType().getAsString(pp);
        if (v->hasAttr<clang::CUDAConstantAttr>()) what = "__constant__ " + what;
        if (v->isConstexpr()) what = "constexpr " + what;
        out.push_back({v->getName().str(), what, initializer_values(ctx, v->getInit())});
      } else if (const auto* alias = dyn_cast<clang::TypedefNameDecl>(d)) {
        const auto* spec = dyn_cast_or_null<clang::ClassTemplateSpecializationDecl>(
            alias->getUnderlyingType()->getAsCXXRecordDecl());
        if (spec == nullptr) continue;
        std::vector<std::string> values;
        for (const auto& arg : spec->getTemplateArgs().asArray()) {
          if (arg.getKind() != clang::TemplateArgument::Pack) continue;
          for (const auto& e : arg.pack_elements()) {
            if (e.getKind() == clang::TemplateArgument::Integral)
              values.push_back(llvm::toString(e.getAsIntegral(), 10));
          }
        }
        if (values.empty()) continue;
        std::string content;
        for (std::size_t i = 0; i < values.size(); ++i)
          content += values[i] + (i + 1 < values.size() ? ", " : "");
        out.push_back({alias->getName().str(),
                       fmt::format("template arguments of {} ({} values)",
                                   spec->getQualifiedNameAsString(), values.size()),
                       content});
      }
    }
  };
  scan(ctx.getTranslationUnitDecl());
  return out;
}

// Why explain's bytes (the encoded arrays the kernels read, each once) and the planner's cost
// model differ, by format: the model charges what a multiply fetches, estimated from the profile.
std::string model_difference(const std::string& format) {
  static const std::map<std::string, std::string> reasons = {
      {"csr",
       "the model charges a coded unit's value table at the profile's count of distinct values; "
       "the encoded table may hold more (a zero for the padded slots)"},
      {"csr_stream",
       "the model adds a fixed start per thread block (its bounds and row bounds) and estimates "
       "the 16-bit column blocks from the profile"},
      {"csr_warp",
       "the model estimates the warp chunks and the long rows' pieces from the profile's row "
       "lengths, and charges the pieces' partial sums (a scratch array) as read and written"},
      {"ell",
       "the model charges the slots each lane's loop visits (up to the row length, or one past "
       "it to find the -1) in whole sectors, not the padded arrays"},
      {"sell",
       "the model charges the slots each lane's loop visits in whole sectors, not every slice's "
       "padding"},
      {"hyb",
       "the model charges the ELL slots each lane's loop visits, not the padded arrays, and the "
       "COO part at the profile's split"},
      {"bro_ell",
       "the model estimates the symbol streams from the profile's delta widths, and does not "
       "charge width tables that are baked in or __constant__"},
      {"bro_coo", "the model estimates the symbol streams from the profile's delta widths"},
      {"bro_hyb",
       "the model estimates both parts' symbol streams from the profile's delta widths and "
       "charges the COO part's atomics"},
      {"amb", "the model estimates chunks, padding and segments from the profile"},
      {"cci",
       "the model estimates the code words from the profile's deltas; the decode table is baked "
       "into the unit"},
      {"bellpack",
       "the model charges the blocks without slice padding (a lower bound; the encoding pads "
       "each slice to its longest row)"},
      {"blocked", "the model estimates blocks and row padding from the profile"},
      {"bcsr", "the model estimates blocks from the profile"},
  };
  const auto it = reasons.find(format);
  return it != reasons.end() ? it->second : "the model estimates the format's arrays";
}

}  // namespace

ExplainReport explain(const KernelSource& src, const ExplainOptions& options) {
  const std::unique_ptr<clang::ASTUnit> ast = detail::parse_cuda(src, options.include_dirs);
  const clang::ASTContext& ctx = ast->getASTContext();
  const clang::FunctionDecl& entry = detail::find_entry(*ast, src);
  const std::vector<KernelParam> params =
      src.kernel_name.empty() ? params_by_name(entry) : src.params;
  std::vector<std::pair<std::string, int>> uses;
  ExplainReport r = explain_kernel(ctx, entry, params, options, uses);
  r.planner_bytes_per_nonzero = options.planner_bytes_per_nonzero;
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

UnitReport explain_unit(const KernelSource& src, const ExplainOptions& options) {
  const std::unique_ptr<clang::ASTUnit> ast = detail::parse_cuda(src, options.include_dirs);
  const clang::ASTContext& ctx = ast->getASTContext();
  const std::vector<const clang::FunctionDecl*> entries = detail::entry_points(*ast, src);
  if (entries.empty()) {
    throw InputError(src.file_name, 0, "no extern \"C\" __global__ kernel definition");
  }
  std::map<std::string, std::vector<KernelParam>> launch_params;
  if (!src.kernel_name.empty()) {
    for (const KernelLaunch& l : src.launches()) launch_params[l.entry] = l.params;
  }
  UnitReport u;
  u.shape = options.shape;
  std::map<std::string, std::pair<std::vector<std::string>, std::vector<std::string>>> users;
  for (const clang::FunctionDecl* entry : entries) {
    std::vector<std::pair<std::string, int>> uses;
    const auto lp = launch_params.find(entry->getNameAsString());
    ExplainReport r =
        explain_kernel(ctx, *entry, lp != launch_params.end() ? lp->second : params_by_name(*entry),
                       options, uses);
    for (const auto& [array, use] : uses) {
      if ((use & 1) != 0) users[array].first.push_back(r.kernel_name);
      if ((use & 2) != 0) users[array].second.push_back(r.kernel_name);
    }
    if (!options.arch.empty()) {
      KernelSource compiled = src;
      compiled.kernel_name = r.kernel_name;
      for (const auto& dir : options.include_dirs) compiled.options.push_back("-I" + dir);
      const runtime::Cubin cubin = runtime::compile_cubin(compiled, options.arch);
      r.resources = Resources{options.arch,           cubin.registers,   cubin.spill_store_bytes,
                              cubin.spill_load_bytes, cubin.stack_bytes, parse_smem(cubin.log)};
    }
    u.kernels.push_back(std::move(r));
  }
  u.baked = baked_data(*ast);
  u.planner_bytes_per_nonzero = options.planner_bytes_per_nonzero;
  if (options.encoded != nullptr) {
    double read_bytes = 0;
    for (const EncodedArray& a : options.encoded->arrays) {
      ArrayUse use{a.name,    std::string(to_string(a.type)),
                   a.count(), static_cast<std::int64_t>(a.bytes.size()),
                   a.scratch, {},
                   {}};
      if (const auto it = users.find(a.name); it != users.end()) {
        use.read_by = it->second.first;
        use.written_by = it->second.second;
      }
      if (!a.scratch && !use.read_by.empty()) read_bytes += static_cast<double>(a.bytes.size());
      const bool table =
          a.name.size() >= 12 && a.name.compare(a.name.size() - 12, 12, "values_table") == 0;
      if (table && (a.type == ElemType::f64 || a.type == ElemType::f32)) {
        std::string content;
        const std::int64_t n = a.count();
        for (std::int64_t i = 0; i < n; ++i) {
          if (n > 24 && i == 12) {
            content += fmt::format("... ({} more) ..., ", n - 24);
            i = n - 12;
          }
          double v = 0;
          if (a.type == ElemType::f64) {
            std::memcpy(&v, a.bytes.data() + i * 8, 8);
          } else {
            float f = 0;
            std::memcpy(&f, a.bytes.data() + i * 4, 4);
            v = f;
          }
          content += fmt::format("{:g}{}", v, i + 1 < n ? ", " : "");
        }
        u.baked.push_back({a.name,
                           fmt::format("value table, {} {} entries (an array of the "
                                       "encoded matrix)",
                                       n, to_string(a.type)),
                           content});
      }
      u.arrays.push_back(std::move(use));
    }
    if (u.shape && u.shape->nnz > 0) {
      u.bytes_per_nonzero = read_bytes / static_cast<double>(u.shape->nnz);
    }
  }
  if (!u.agrees()) {
    u.difference = model_difference(options.format);
    const bool reordered = std::any_of(u.arrays.begin(), u.arrays.end(), [](const ArrayUse& a) {
      return a.name == "row_map" || a.name == "col_map";
    });
    const bool coded = std::any_of(u.arrays.begin(), u.arrays.end(), [](const ArrayUse& a) {
      return a.name.size() >= 12 && a.name.compare(a.name.size() - 12, 12, "values_table") == 0;
    });
    if (coded && options.format != "csr") {
      u.difference += "; the value table is charged at the profile's count of distinct values";
    }
    if (reordered) {
      u.difference +=
          "; the row map and the gather of x (reordering, not the format) are not in "
          "the model";
    }
  }
  return u;
}

bool UnitReport::agrees() const {
  if (!bytes_per_nonzero || !planner_bytes_per_nonzero) return true;
  return std::abs(*bytes_per_nonzero - *planner_bytes_per_nonzero) <=
         1e-9 * std::max(1.0, *planner_bytes_per_nonzero);
}

double ExplainReport::matrix_bytes_per_nonzero() const {
  if (!shape || shape->nnz == 0) return nonzero_bytes;
  return (row_bytes * static_cast<double>(shape->nrows + 1) +
          nonzero_bytes * static_cast<double>(shape->stored_nnz)) /
         static_cast<double>(shape->nnz);
}

}  // namespace spmvc::tooling
