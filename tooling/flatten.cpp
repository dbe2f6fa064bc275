// The flattener: Clang parses the generated unit, and a PrinterHelper prints the entry point and
// the specialisations it reaches as plain functions. Clang's own printers cannot do this alone
// (../shared/docs/TOOLCHAIN.md, section 2): they print `template <>` heads, `#pragma unroll
// (enable)` and discarded `if constexpr` branches, and DeclPrinter ignores the helper, so
// declarations, `for` heads and `if` statements are printed here.
#include "spmvc/tooling/flatten.hpp"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/PrettyPrinter.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Format/Format.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Tooling/Core/Replacement.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "spmvc/error.hpp"
#include "tooling/parse.hpp"

namespace spmvc::tooling {

namespace detail {

namespace {

constexpr const char* kVirtualRoot = "/spmvc-virtual";

// What the templates need from CUDA, declared the way clang's CUDA headers do (TOOLCHAIN.md 2b).
// Only declarations: nothing here is printed, and NVRTC supplies the real ones.
constexpr const char* kPrelude = R"(
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#include "__clang_cuda_builtin_vars.h"
struct __attribute__((aligned(8))) uint2 { unsigned int x, y; };
struct __attribute__((aligned(16))) uint4 { unsigned int x, y, z, w; };
__device__ void __syncthreads();
template <class T> __device__ T __shfl_sync(unsigned, T, int, int = 32);
template <class T> __device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);
template <class T> __device__ T __shfl_down_sync(unsigned, T, unsigned, int = 32);
template <class T> __device__ T __shfl_xor_sync(unsigned, T, int, int = 32);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ int __popc(unsigned);
__device__ int __clz(int);
__device__ int __clzll(long long);
template <class T> __device__ T __ldg(const T*);
template <class T> __device__ T atomicAdd(T*, T);
extern "C" __device__ void* memcpy(void*, const void*, decltype(sizeof 0));
)";

}  // namespace

std::unique_ptr<clang::ASTUnit> parse_cuda(const KernelSource& src,
                                           const std::vector<std::string>& include_dirs) {
  const std::string root = kVirtualRoot;
  std::vector<std::string> args = {"-x",
                                   "cuda",
                                   "--cuda-device-only",
                                   "--cuda-gpu-arch=sm_80",
                                   "-nocudainc",
                                   "-nocudalib",
                                   "--cuda-path=/nonexistent",
                                   "-std=c++17",
                                   "-resource-dir=" SPMVC_CLANG_RESOURCE_DIR,
                                   "-I" + root,
                                   "-include",
                                   root + "/spmvc_prelude.cuh",
                                   "-Wno-unknown-cuda-version"};
  clang::tooling::FileContentMappings files = {{root + "/spmvc_prelude.cuh", kPrelude}};
  for (const auto& [name, text] : src.headers) files.emplace_back(root + "/" + name, text);
  for (const auto& dir : include_dirs) args.push_back("-I" + dir);
  std::string diagnostics;
  llvm::raw_string_ostream diag_os(diagnostics);
  clang::TextDiagnosticPrinter printer(diag_os, new clang::DiagnosticOptions());
  auto ast = clang::tooling::buildASTFromCodeWithArgs(
      src.source, args, root + "/" + src.file_name, "spmvc",
      std::make_shared<clang::PCHContainerOperations>(),
      clang::tooling::getClangStripDependencyFileAdjuster(), files, &printer);
  diag_os.flush();
  if (!ast || ast->getDiagnostics().hasErrorOccurred()) {
    throw InternalError("clang could not parse " + src.file_name + ":\n" + diagnostics);
  }
  return ast;
}

const clang::FunctionDecl& find_entry(clang::ASTUnit& ast, const KernelSource& src) {
  clang::ASTContext& ctx = ast.getASTContext();
  if (src.kernel_name.empty()) {
    // A source read from disk: its only extern "C" kernel definition.
    std::vector<const clang::FunctionDecl*> found;
    for (const clang::Decl* d : ctx.getTranslationUnitDecl()->decls()) {
      const auto* linkage = llvm::dyn_cast<clang::LinkageSpecDecl>(d);
      if (linkage == nullptr) continue;
      for (const clang::Decl* inner : linkage->decls()) {
        const auto* f = llvm::dyn_cast<clang::FunctionDecl>(inner);
        if (f != nullptr && f->hasAttr<clang::CUDAGlobalAttr>() &&
            f->doesThisDeclarationHaveABody()) {
          found.push_back(f);
        }
      }
    }
    if (found.size() != 1) {
      throw InputError(src.file_name, 0,
                       "expected one extern \"C\" __global__ kernel definition, found " +
                           std::to_string(found.size()));
    }
    return *found.front();
  }
  for (clang::NamedDecl* d :
       ctx.getTranslationUnitDecl()->lookup(&ctx.Idents.get(src.kernel_name))) {
    const auto* f = llvm::dyn_cast<clang::FunctionDecl>(d);
    if (f && f->isExternC() && f->hasAttr<clang::CUDAGlobalAttr>() &&
        f->doesThisDeclarationHaveABody()) {
      return *f;
    }
  }
  throw InternalError("no extern \"C\" __global__ definition of " + src.kernel_name + " in " +
                      src.file_name);
}

}  // namespace detail

namespace {

using clang::dyn_cast;
using clang::isa;

// Every function with a body that `root` calls, directly or not, callees before callers.
// Functions of system headers (clang's threadIdx/blockIdx getters) are CUDA's, not ours.
class CalleeCollector : public clang::RecursiveASTVisitor<CalleeCollector> {
 public:
  explicit CalleeCollector(const clang::SourceManager& sm) : sm_(sm) {}
  std::vector<const clang::FunctionDecl*> order;

  void collect(const clang::FunctionDecl& f) {
    seen_.insert(f.getCanonicalDecl());
    TraverseStmt(f.getBody());
  }
  bool VisitCallExpr(clang::CallExpr* call) {
    const clang::FunctionDecl* callee = call->getDirectCallee();
    if (callee == nullptr) return true;
    const clang::FunctionDecl* def = callee->getDefinition();
    if (def == nullptr || sm_.isInSystemHeader(def->getLocation()) ||
        !seen_.insert(def->getCanonicalDecl()).second) {
      return true;
    }
    CalleeCollector inner(sm_);
    inner.seen_ = seen_;
    inner.collect(*def);
    for (const auto* g : inner.order) {
      if (std::find(order.begin(), order.end(), g) == order.end()) order.push_back(g);
    }
    seen_.insert(inner.seen_.begin(), inner.seen_.end());
    order.push_back(def);
    return true;
  }

 private:
  const clang::SourceManager& sm_;
  std::set<const clang::FunctionDecl*> seen_;
};

// A C identifier from a type or value: `long long` -> `longlong`, `-1` -> `m1`.
std::string identifier_part(std::string s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      out += c;
    } else if (c == '-') {
      out += 'm';
    } else if (c != ' ' && !out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

// `spmvc::csr::spmv<4, 2, 256, 1, true, int, double, double>` -> `csr_spmv_4_2_256_1_true_int_
// double_double`: the qualified name less the spmvc namespace, then each template argument.
std::string flat_name(const clang::FunctionDecl& f, const clang::PrintingPolicy& pp) {
  std::string name = f.getQualifiedNameAsString();
  if (name.rfind("spmvc::", 0) == 0) name = name.substr(7);
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name.compare(i, 2, "::") == 0) {
      out += '_';
      ++i;
    } else {
      out += name[i];
    }
  }
  if (const auto* args = f.getTemplateSpecializationArgs()) {
    for (const auto& arg : args->asArray()) {
      std::string part;
      if (arg.getKind() == clang::TemplateArgument::Integral) {
        part = arg.getIntegralType()->isBooleanType()
                   ? (arg.getAsIntegral().getBoolValue() ? "true" : "false")
                   : llvm::toString(arg.getAsIntegral(), 10);
      } else if (arg.getKind() == clang::TemplateArgument::Type) {
        part = arg.getAsType().getCanonicalType().getAsString(pp);
      } else {
        part = "arg";
      }
      out += '_';
      out += identifier_part(part);
    }
  }
  return out;
}

// How a helper's body can stand in for a call to it, in plain C++ (NVRTC rejects GNU statement
// expressions, so blocks and parenthesised expressions only).
enum class InlineShape {
  none,        // printed as a function
  block,       // void, at most a trailing `return;`: the call becomes `{ bindings; body }`
  expression,  // body is `return e;` and each parameter appears at most once: `(e[args])`
  tail,        // ends in its only `return e;`: `lhs = call(...)` becomes `{ ...; lhs = e; }`
};

InlineShape inline_shape(const clang::FunctionDecl& f) {
  const auto* body = dyn_cast_or_null<clang::CompoundStmt>(f.getBody());
  if (body == nullptr) return InlineShape::none;
  class Walk : public clang::RecursiveASTVisitor<Walk> {
   public:
    int returns = 0;
    std::map<const clang::ParmVarDecl*, int> uses;
    bool VisitReturnStmt(clang::ReturnStmt*) {
      ++returns;
      return true;
    }
    bool VisitDeclRefExpr(clang::DeclRefExpr* ref) {
      if (const auto* p = dyn_cast<clang::ParmVarDecl>(ref->getDecl())) ++uses[p];
      return true;
    }
  } walk;
  walk.TraverseStmt(const_cast<clang::CompoundStmt*>(body));
  const auto* last = body->body_empty() ? nullptr : dyn_cast<clang::ReturnStmt>(body->body_back());
  if (f.getReturnType()->isVoidType()) {
    return walk.returns == 0 || (walk.returns == 1 && last != nullptr) ? InlineShape::block
                                                                       : InlineShape::none;
  }
  if (walk.returns != 1 || last == nullptr || last->getRetValue() == nullptr)
    return InlineShape::none;
  bool single_use = true;
  for (const auto& [param, n] : walk.uses) single_use = single_use && n <= 1;
  if (body->size() == 1 && single_use) return InlineShape::expression;
  return InlineShape::tail;
}

class FlatPrinter : public clang::PrinterHelper {
 public:
  FlatPrinter(const clang::ASTContext& ctx, const clang::PrintingPolicy& pp,
              const std::map<const clang::FunctionDecl*, std::string>& names, bool inline_helpers)
      : ctx_(ctx), pp_(pp), names_(names), inline_(inline_helpers) {}

  /// Functions some call still names (printed as functions); in inline mode, only those.
  const std::set<const clang::FunctionDecl*>& needed() const { return needed_; }

  void print(const clang::Stmt* s, llvm::raw_ostream& os) {
    s->printPretty(os, this, pp_, 0, "\n", &ctx_);
  }

  void print_params(const clang::FunctionDecl& f, llvm::raw_ostream& os) {
    os << "(";
    for (unsigned i = 0; i < f.getNumParams(); ++i) {
      const clang::ParmVarDecl* p = f.getParamDecl(i);
      if (i > 0) os << ", ";
      p->getType().print(os, pp_, p->getName());
    }
    os << ")";
  }

  bool handledStmt(clang::Stmt* s, llvm::raw_ostream& os) override {
    if (auto* assign = dyn_cast<clang::BinaryOperator>(s))
      return print_tail_assignment(*assign, os);
    if (auto* call = dyn_cast<clang::CallExpr>(s)) return print_call(*call, os);
    if (auto* ifs = dyn_cast<clang::IfStmt>(s)) return print_if(*ifs, os);
    if (auto* attributed = dyn_cast<clang::AttributedStmt>(s))
      return print_attributed(*attributed, os);
    if (auto* cond = dyn_cast<clang::ConditionalOperator>(s)) return print_conditional(*cond, os);
    if (auto* ref = dyn_cast<clang::DeclRefExpr>(s)) {
      if (const auto* p = dyn_cast<clang::ParmVarDecl>(ref->getDecl())) {
        if (const auto it = renamed_.find(p); it != renamed_.end()) {
          os << it->second;
          return true;
        }
      }
      return print_constant(*ref, os);
    }
    if (auto* decl = dyn_cast<clang::DeclStmt>(s)) return print_decls(*decl, os, true);
    if (auto* loop = dyn_cast<clang::ForStmt>(s)) return print_for(*loop, os);
    return false;
  }

 private:
  // A call to a printed function takes its flat name; its arguments go through this helper.
  bool print_call(const clang::CallExpr& call, llvm::raw_ostream& os) {
    const clang::FunctionDecl* callee = call.getDirectCallee();
    if (callee == nullptr || isa<clang::CXXOperatorCallExpr>(call)) return false;
    const clang::FunctionDecl* def = callee->getDefinition();
    const auto it = def != nullptr ? names_.find(def) : names_.end();
    if (it == names_.end()) return false;
    if (inline_) {
      switch (inline_shape(*def)) {
        case InlineShape::block:
          return print_inlined(call, *def, it->second, nullptr, os);
        case InlineShape::expression:
          return print_inlined_expression(call, *def, os);
        default:
          break;
      }
    }
    needed_.insert(def);
    os << it->second << "(";
    for (unsigned i = 0; i < call.getNumArgs(); ++i) {
      if (i > 0) os << ", ";
      const clang::Expr* arg = call.getArg(i);
      if (const auto* d = dyn_cast<clang::CXXDefaultArgExpr>(arg)) arg = d->getExpr();
      print(arg, os);
    }
    os << ")";
    return true;
  }

  // `lhs = f(...)` with f of the tail shape: `{ bindings; body; lhs = returned value; }`.
  bool print_tail_assignment(const clang::BinaryOperator& op, llvm::raw_ostream& os) {
    if (!inline_ || op.getOpcode() != clang::BO_Assign) return false;
    const auto* call = dyn_cast<clang::CallExpr>(op.getRHS()->IgnoreImplicit());
    const clang::FunctionDecl* callee = call != nullptr ? call->getDirectCallee() : nullptr;
    const clang::FunctionDecl* def = callee != nullptr ? callee->getDefinition() : nullptr;
    const auto it = def != nullptr ? names_.find(def) : names_.end();
    if (it == names_.end() || inline_shape(*def) != InlineShape::tail) return false;
    return print_inlined(*call, *def, it->second, op.getLHS(), os);
  }

  // The callee's body in place of the call, as a block: parameters bound to the arguments, then
  // the statements; a trailing `return e;` becomes `lhs = e;` (tail shape) or is dropped (void).
  // Parameters are renamed after the callee (`p` of load_vector -> `load_vector_p_3`) so the
  // bindings never shadow a caller variable an argument still refers to.
  bool print_inlined(const clang::CallExpr& call, const clang::FunctionDecl& def,
                     const std::string& name, const clang::Expr* lhs, llvm::raw_ostream& os) {
    const int site = ++sites_;
    std::vector<std::pair<const clang::ParmVarDecl*, std::optional<std::string>>> saved;
    os << "{  // " << name << "\n";
    for (unsigned i = 0; i < def.getNumParams(); ++i) {
      const clang::ParmVarDecl* p = def.getParamDecl(i);
      const std::string local = identifier_part(def.getNameAsString()) + "_" + p->getName().str() +
                                "_" + std::to_string(site);
      p->getType().print(os, pp_, local);
      os << " = ";
      print(argument(call, i), os);
      os << ";\n";
      saved.emplace_back(p, rename(p, local));
    }
    for (const clang::Stmt* s : cast<clang::CompoundStmt>(def.getBody())->body()) {
      if (const auto* ret = dyn_cast<clang::ReturnStmt>(s)) {
        if (lhs != nullptr && ret->getRetValue() != nullptr) {
          print(lhs, os);
          os << " = ";
          print(ret->getRetValue(), os);
          os << ";\n";
        }
      } else {
        print_statement(s, os);
      }
    }
    os << "}";
    restore(saved);
    return true;
  }

  // `f(a)` with f's body `return e;`: `(e)` with each parameter replaced by its argument.
  bool print_inlined_expression(const clang::CallExpr& call, const clang::FunctionDecl& def,
                                llvm::raw_ostream& os) {
    std::vector<std::pair<const clang::ParmVarDecl*, std::optional<std::string>>> saved;
    for (unsigned i = 0; i < def.getNumParams(); ++i) {
      std::string text;
      llvm::raw_string_ostream arg(text);
      print(argument(call, i), arg);
      arg.flush();
      saved.emplace_back(def.getParamDecl(i), rename(def.getParamDecl(i), "(" + text + ")"));
    }
    const auto* ret =
        cast<clang::ReturnStmt>(cast<clang::CompoundStmt>(def.getBody())->body_back());
    os << "(";
    print(ret->getRetValue(), os);
    os << ")";
    restore(saved);
    return true;
  }

  static const clang::Expr* argument(const clang::CallExpr& call, unsigned i) {
    const clang::Expr* arg = call.getArg(i);
    if (const auto* d = dyn_cast<clang::CXXDefaultArgExpr>(arg)) arg = d->getExpr();
    return arg;
  }

  // Prints uses of `p` as `text` from now on; returns what it printed as before.
  std::optional<std::string> rename(const clang::ParmVarDecl* p, std::string text) {
    std::optional<std::string> prior;
    if (const auto it = renamed_.find(p); it != renamed_.end()) prior = it->second;
    renamed_[p] = std::move(text);
    return prior;
  }

  void restore(
      const std::vector<std::pair<const clang::ParmVarDecl*, std::optional<std::string>>>& saved) {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second) {
        renamed_[it->first] = *it->second;
      } else {
        renamed_.erase(it->first);
      }
    }
  }

  // `if constexpr`, and any `if` whose condition is a constant after substitution, prints only
  // the branch taken.
  bool print_if(const clang::IfStmt& s, llvm::raw_ostream& os) {
    if (s.getInit() != nullptr || s.getConditionVariable() != nullptr) return false;
    const clang::Expr* cond = s.getCond();
    bool value = false;
    if (s.isConstexpr()) {
      if (!cond->EvaluateAsBooleanCondition(value, ctx_)) return false;
    } else {
      if (cond->isValueDependent() || !cond->isIntegerConstantExpr(ctx_)) return false;
      value = cond->EvaluateKnownConstInt(ctx_).getBoolValue();
    }
    const clang::Stmt* taken = value ? s.getThen() : s.getElse();
    print_statement(taken, os);
    return true;
  }

  void print_statement(const clang::Stmt* s, llvm::raw_ostream& os) {
    if (s == nullptr || isa<clang::NullStmt>(s)) {
      os << "{}\n";
    } else if (isa<clang::Expr>(s)) {
      print(s, os);
      os << ";\n";
    } else {
      print(s, os);
    }
  }

  // LoopHintAttr prints as the pragma that made it; Clang's printer writes `(enable)`.
  bool print_attributed(const clang::AttributedStmt& s, llvm::raw_ostream& os) {
    std::string pragmas;
    for (const clang::Attr* a : s.getAttrs()) {
      const auto* hint = dyn_cast<clang::LoopHintAttr>(a);
      if (hint == nullptr) return false;
      switch (hint->getOption()) {
        case clang::LoopHintAttr::Unroll:
          pragmas += hint->getState() == clang::LoopHintAttr::Disable ? "#pragma unroll 1\n"
                                                                      : "#pragma unroll\n";
          break;
        case clang::LoopHintAttr::UnrollCount:
          pragmas += "#pragma unroll " +
                     llvm::toString(hint->getValue()->EvaluateKnownConstInt(ctx_), 10) + "\n";
          break;
        default:
          return false;
      }
    }
    os << "\n" << pragmas;
    print_statement(s.getSubStmt(), os);
    return true;
  }

  bool print_conditional(const clang::ConditionalOperator& c, llvm::raw_ostream& os) {
    const clang::Expr* cond = c.getCond();
    if (cond->isValueDependent() || !cond->isIntegerConstantExpr(ctx_)) return false;
    const clang::Expr* taken =
        cond->EvaluateKnownConstInt(ctx_).getBoolValue() ? c.getTrueExpr() : c.getFalseExpr();
    const bool parens = !isa<clang::ParenExpr>(taken);
    if (parens) os << "(";
    print(taken, os);
    if (parens) os << ")";
    return true;
  }

  // Integral constants are not printed (namespace-scope ones like kCsrPadElements are outside the
  // flattened functions; local constexpr ones like kBytes may serve only a discarded branch, and
  // nvcc warns about them), so every use takes the value.
  static bool is_folded_constant(const clang::VarDecl& v) {
    const bool global =
        v.hasGlobalStorage() && !v.isStaticLocal() && v.getType().isConstQualified();
    return (global || v.isConstexpr()) && v.getType()->isIntegralOrEnumerationType();
  }

  bool print_constant(const clang::DeclRefExpr& ref, llvm::raw_ostream& os) {
    const clang::ValueDecl* d = ref.getDecl();
    if (const auto* e = dyn_cast<clang::EnumConstantDecl>(d)) {
      os << llvm::toString(e->getInitVal(), 10);
      return true;
    }
    const auto* v = dyn_cast<clang::VarDecl>(d);
    if (v == nullptr || !is_folded_constant(*v)) return false;
    const clang::APValue* value = v->evaluateValue();
    if (value == nullptr || !value->isInt()) return false;
    if (v->getType()->isBooleanType()) {
      os << (value->getInt().getBoolValue() ? "true" : "false");
    } else {
      os << llvm::toString(value->getInt(), 10);
    }
    return true;
  }

  // Variables, one declaration each; static_asserts with their values; type aliases dropped
  // (every type prints canonical, so nothing names them).
  bool print_decls(const clang::DeclStmt& s, llvm::raw_ostream& os, bool statement) {
    bool first = true;
    for (const clang::Decl* d : s.decls()) {
      if (const auto* v = dyn_cast<clang::VarDecl>(d)) {
        if (!statement && !first) return false;  // a `for` head: fall back below
        if (statement && is_folded_constant(*v)) continue;
        if (v->hasAttr<clang::CUDASharedAttr>()) os << "__shared__ ";
        if (v->isStaticLocal()) os << "static ";
        clang::QualType type = v->getType();
        if (v->isConstexpr()) {
          os << "constexpr ";
          type.removeLocalConst();  // implied by constexpr
        }
        type.print(os, pp_, v->getName());
        if (const clang::Expr* init = v->getInit()) {
          os << " = ";
          print(init, os);
        }
        if (statement) os << ";\n";
        first = false;
      } else if (const auto* a = dyn_cast<clang::StaticAssertDecl>(d)) {
        os << "static_assert(";
        print(a->getAssertExpr(), os);
        if (a->getMessage() != nullptr) {
          os << ", ";
          print(a->getMessage(), os);
        }
        os << ");\n";
      } else if (!isa<clang::TypedefNameDecl>(d)) {
        throw InternalError("flatten: cannot print a local " + std::string(d->getDeclKindName()) +
                            " declaration");
      }
    }
    return true;
  }

  bool print_for(const clang::ForStmt& s, llvm::raw_ostream& os) {
    if (s.getConditionVariable() != nullptr) return false;
    os << "for (";
    if (const clang::Stmt* init = s.getInit()) {
      const auto* decls = dyn_cast<clang::DeclStmt>(init);
      if (decls != nullptr ? !decls->isSingleDecl() : !isa<clang::Expr>(init)) return false;
      if (decls != nullptr) {
        print_decls(*decls, os, false);
      } else {
        print(init, os);
      }
    }
    os << "; ";
    if (s.getCond() != nullptr) print(s.getCond(), os);
    os << "; ";
    if (s.getInc() != nullptr) print(s.getInc(), os);
    os << ") ";
    print_statement(s.getBody(), os);
    return true;
  }

  const clang::ASTContext& ctx_;
  const clang::PrintingPolicy& pp_;
  const std::map<const clang::FunctionDecl*, std::string>& names_;
  const bool inline_;
  std::set<const clang::FunctionDecl*> needed_;
  std::map<const clang::ParmVarDecl*, std::string> renamed_;
  int sites_ = 0;
};

// The unit's leading comment block (the plan banner), kept above the flattened code.
std::string banner(const std::string& source) {
  std::istringstream in(source);
  std::string line, out;
  while (std::getline(in, line) && line.rfind("//", 0) == 0) {
    if (line.find("Do not edit") != std::string::npos) continue;
    out += line + "\n";
  }
  return out;
}

std::string clang_format(const std::string& code, const std::string& file_name) {
  clang::format::FormatStyle style =
      clang::format::getGoogleStyle(clang::format::FormatStyle::LK_Cpp);
  style.ReflowComments = false;  // the plan banner stays line for line as in the template unit
  const clang::tooling::Replacements fixes = clang::format::reformat(
      style, code, {clang::tooling::Range(0, static_cast<unsigned>(code.size()))}, file_name);
  auto formatted = clang::tooling::applyAllReplacements(code, fixes);
  if (!formatted) {
    throw InternalError("flatten: clang-format failed on " + file_name + ": " +
                        llvm::toString(formatted.takeError()));
  }
  return *formatted;
}

}  // namespace

KernelSource flatten(const KernelSource& src, const FlattenOptions& options) {
  // Coded values reach the templates as accessor objects (templates/common.cuh), whose class
  // specialisations this printer does not write out.
  if (src.source.find("spmvc::UnitValues") != std::string::npos ||
      src.source.find("spmvc::TableValues") != std::string::npos)
    throw InputError("flatten", 0,
                     fmt::format("{} stores its values coded (values=1..3), which flattening does "
                                 "not support yet; plan it with --no-value-coding",
                                 src.kernel_name));
  const std::unique_ptr<clang::ASTUnit> ast = detail::parse_cuda(src);
  const clang::ASTContext& ctx = ast->getASTContext();
  const clang::FunctionDecl& entry = detail::find_entry(*ast, src);

  clang::PrintingPolicy pp(ctx.getLangOpts());
  pp.PrintCanonicalTypes = true;
  pp.Bool = true;

  CalleeCollector collector(ctx.getSourceManager());
  collector.collect(entry);
  std::map<const clang::FunctionDecl*, std::string> names;
  std::set<std::string> used = {src.kernel_name};
  for (const clang::FunctionDecl* f : collector.order) {
    std::string name = flat_name(*f, pp);
    for (int i = 2; used.count(name) != 0; ++i) name = flat_name(*f, pp) + "_" + std::to_string(i);
    used.insert(name);
    names[f] = name;
  }

  FlatPrinter printer(ctx, pp, names, options.inline_helpers);
  // The entry point first: in inline mode it decides which helpers some call still names.
  std::string entry_code;
  {
    llvm::raw_string_ostream es(entry_code);
    es << "extern \"C\" __global__ void ";
    if (const auto* bounds = entry.getAttr<clang::CUDALaunchBoundsAttr>()) {
      es << "__launch_bounds__("
         << llvm::toString(bounds->getMaxThreads()->EvaluateKnownConstInt(ctx), 10);
      if (bounds->getMinBlocks() != nullptr) {
        es << ", " << llvm::toString(bounds->getMinBlocks()->EvaluateKnownConstInt(ctx), 10);
      }
      es << ") ";
    }
    es << src.kernel_name;
    printer.print_params(entry, es);
    es << " ";
    printer.print(entry.getBody(), es);
  }
  // Helpers, callees before callers; printing one may make others needed, hence the fixpoint.
  std::map<const clang::FunctionDecl*, std::string> helper_code;
  for (bool more = true; more;) {
    more = false;
    for (const clang::FunctionDecl* f : collector.order) {
      if (helper_code.count(f) != 0 || (options.inline_helpers && printer.needed().count(f) == 0))
        continue;
      std::string code_f;
      llvm::raw_string_ostream fs(code_f);
      fs << "__device__ __forceinline__ ";
      f->getReturnType().print(fs, pp);
      fs << " " << names[f];
      printer.print_params(*f, fs);
      fs << " ";
      printer.print(f->getBody(), fs);
      fs << "\n";
      fs.flush();
      helper_code[f] = code_f;
      more = true;
    }
  }

  std::string code;
  llvm::raw_string_ostream os(code);
  os << banner(src.source) << "//\n// Flattened by `spmvc emit --flatten`: "
     << (options.inline_helpers
             ? "the entry point with every helper's body printed at its call\n// site, "
             : "each function the entry point reaches, printed\n// ")
     << "with compile-time parameters as values and only the branches they select.\n"
        "// Standalone: it needs no spmvc header.\n\n";
  for (const clang::FunctionDecl* f : collector.order) {
    if (const auto it = helper_code.find(f); it != helper_code.end()) os << it->second;
  }
  os << entry_code;
  os.flush();

  KernelSource out = src;
  out.source = options.format ? clang_format(code, src.file_name) : code;
  out.headers.clear();
  const auto dot = src.file_name.rfind(".cu");
  out.file_name =
      (dot == std::string::npos ? src.file_name : src.file_name.substr(0, dot)) + ".flat.cu";
  return out;
}

}  // namespace spmvc::tooling
