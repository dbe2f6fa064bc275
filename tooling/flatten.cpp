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

#include <functional>
#include <map>
#include <optional>
#include <regex>
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
__device__ void __syncwarp(unsigned = 0xffffffffu);
template <class T> __device__ T __shfl_sync(unsigned, T, int, int = 32);
template <class T> __device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);
template <class T> __device__ T __shfl_down_sync(unsigned, T, unsigned, int = 32);
template <class T> __device__ T __shfl_xor_sync(unsigned, T, int, int = 32);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ int __any_sync(unsigned, int);
__device__ unsigned __reduce_or_sync(unsigned, unsigned);
__device__ int __popc(unsigned);
__device__ int __ffs(int);
__device__ long long __double_as_longlong(double);
__device__ unsigned __float_as_uint(float);
__device__ float __uint_as_float(unsigned);
__device__ int __clz(int);
__device__ int __clzll(long long);
template <class T> __device__ T __ldg(const T*);
template <class T> __device__ T __ldcs(const T*);
template <class T> __device__ void __stcs(T*, T);
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

// The unit's extern "C" __global__ definitions: those it launches, in launch order, then any
// other it defines (hyb's COO kernel when the COO part is empty), in source order.
std::vector<const clang::FunctionDecl*> entry_points(clang::ASTUnit& ast, const KernelSource& src) {
  std::vector<const clang::FunctionDecl*> entries;
  if (!src.kernel_name.empty()) {
    for (const KernelLaunch& launch : src.launches()) {
      KernelSource named = src;
      named.kernel_name = launch.entry;
      const clang::FunctionDecl* f = &find_entry(ast, named);
      if (std::find(entries.begin(), entries.end(), f) == entries.end()) entries.push_back(f);
    }
  }
  for (const clang::Decl* d : ast.getASTContext().getTranslationUnitDecl()->decls()) {
    const auto* linkage = llvm::dyn_cast<clang::LinkageSpecDecl>(d);
    const auto* single = llvm::dyn_cast<clang::FunctionDecl>(d);
    std::vector<const clang::Decl*> inner;
    if (linkage != nullptr) inner.assign(linkage->decls_begin(), linkage->decls_end());
    if (single != nullptr) inner.push_back(single);
    for (const clang::Decl* i : inner) {
      const auto* f = llvm::dyn_cast<clang::FunctionDecl>(i);
      if (f != nullptr && f->isExternC() && f->hasAttr<clang::CUDAGlobalAttr>() &&
          f->doesThisDeclarationHaveABody() &&
          std::find(entries.begin(), entries.end(), f) == entries.end()) {
        entries.push_back(f);
      }
    }
  }
  return entries;
}

}  // namespace detail

namespace {

using clang::dyn_cast;
using clang::isa;

// A construct the printer cannot write as plain CUDA yet: an error naming it and where it is,
// never a file that does not compile.
[[noreturn]] void cannot_print(const std::string& what, const clang::SourceManager& sm,
                               clang::SourceLocation loc) {
  const clang::PresumedLoc p = sm.getPresumedLoc(sm.getExpansionLoc(loc));
  std::string file = p.isValid() ? p.getFilename() : "?";
  file = file.substr(file.find_last_of('/') + 1);
  throw InternalError(fmt::format("flatten: cannot print {} ({}:{}) yet", what, file,
                                  p.isValid() ? p.getLine() : 0));
}

// Declarations of CUDA itself: clang's built-in variables (system headers) and the vector types
// the prelude declares (NVRTC and nvcc supply both).
bool is_cuda_own(const clang::SourceManager& sm, const clang::Decl& d) {
  const clang::SourceLocation loc = d.getLocation();
  if (sm.isInSystemHeader(loc)) return true;
  const clang::PresumedLoc p = sm.getPresumedLoc(sm.getExpansionLoc(loc));
  return p.isValid() && std::string(p.getFilename()).find("spmvc_prelude") != std::string::npos;
}

// Integral constants are not printed (namespace-scope ones like kCsrPadElements are outside the
// flattened functions; local constexpr ones like kBytes may serve only a discarded branch, and
// nvcc warns about them), so every use takes the value.
bool is_folded_constant(const clang::VarDecl& v) {
  const bool global = v.hasGlobalStorage() && !v.isStaticLocal() && v.getType().isConstQualified();
  return (global || v.isConstexpr()) && v.getType()->isIntegralOrEnumerationType();
}

// Every function with a body that the entry points call or construct with, directly or not,
// callees before callers (member functions and constructors of the structs included); the
// structs their code names; the namespace-scope variables it reads.
class Collector : public clang::RecursiveASTVisitor<Collector> {
 public:
  explicit Collector(const clang::SourceManager& sm) : sm_(sm) {}
  std::vector<const clang::FunctionDecl*> order;
  std::vector<const clang::CXXRecordDecl*> records;
  std::vector<const clang::VarDecl*> globals;
  /// extern "C" functions the code calls that the unit declares but does not define (NVVM's
  /// __nvvm_reflect): the flat unit declares them too.
  std::vector<const clang::FunctionDecl*> externs;

  void collect(const clang::FunctionDecl& f) {
    seen_.insert(f.getCanonicalDecl());
    signature(f);
    if (const auto* ctor = dyn_cast<clang::CXXConstructorDecl>(&f)) {
      for (const clang::CXXCtorInitializer* init : ctor->inits()) {
        if (init->isWritten()) TraverseStmt(init->getInit());
      }
    }
    TraverseStmt(f.getBody());
  }
  bool VisitCallExpr(clang::CallExpr* call) {
    reach(call->getDirectCallee());
    return true;
  }
  bool VisitCXXConstructExpr(clang::CXXConstructExpr* e) {
    const clang::CXXConstructorDecl* ctor = e->getConstructor();
    if (ctor != nullptr && ctor->isUserProvided()) reach(ctor);
    add_type(e->getType());
    return true;
  }
  bool VisitExpr(clang::Expr* e) {
    if (!e->isTypeDependent()) add_type(e->getType());
    return true;
  }
  bool VisitDeclaratorDecl(clang::DeclaratorDecl* d) {
    add_type(d->getType());
    return true;
  }
  bool VisitDeclRefExpr(clang::DeclRefExpr* ref) {
    const auto* v = dyn_cast<clang::VarDecl>(ref->getDecl());
    if (v == nullptr || !v->hasGlobalStorage() || v->isStaticLocal() || v->isStaticDataMember() ||
        is_folded_constant(*v) || is_cuda_own(sm_, *v)) {
      return true;
    }
    const clang::VarDecl* def = v->getDefinition() != nullptr ? v->getDefinition() : v;
    if (std::find(globals.begin(), globals.end(), def) == globals.end()) globals.push_back(def);
    return true;
  }

 private:
  void signature(const clang::FunctionDecl& f) {
    add_type(f.getReturnType());
    for (const clang::ParmVarDecl* p : f.parameters()) add_type(p->getType());
    if (const auto* m = dyn_cast<clang::CXXMethodDecl>(&f)) add_record(m->getParent());
  }

  void reach(const clang::FunctionDecl* callee) {
    if (callee == nullptr) return;
    const clang::FunctionDecl* def = callee->getDefinition();
    if (def == nullptr && callee->isExternC() && !is_cuda_own(sm_, *callee)) {
      const clang::FunctionDecl* first = callee->getFirstDecl();
      if (std::find(externs.begin(), externs.end(), first) == externs.end())
        externs.push_back(first);
    }
    if (def == nullptr || is_cuda_own(sm_, *def) || !seen_.insert(def->getCanonicalDecl()).second)
      return;
    Collector inner(sm_);
    inner.seen_ = seen_;
    inner.records = records;
    inner.globals = globals;
    inner.externs = externs;
    inner.collect(*def);
    for (const auto* g : inner.order) {
      if (std::find(order.begin(), order.end(), g) == order.end()) order.push_back(g);
    }
    records = inner.records;
    globals = inner.globals;
    externs = inner.externs;
    seen_.insert(inner.seen_.begin(), inner.seen_.end());
    order.push_back(def);
  }

  void add_type(clang::QualType t) {
    if (t.isNull()) return;
    t = t.getCanonicalType();
    while (true) {
      if (t->isPointerType() || t->isReferenceType()) {
        t = t->getPointeeType().getCanonicalType();
      } else if (const clang::ArrayType* a = t->getAsArrayTypeUnsafe()) {
        t = a->getElementType().getCanonicalType();
      } else {
        break;
      }
    }
    if (const clang::CXXRecordDecl* r = t->getAsCXXRecordDecl()) add_record(r);
  }

  void add_record(const clang::CXXRecordDecl* r) {
    const clang::CXXRecordDecl* def = r->getDefinition();
    if (def == nullptr || is_cuda_own(sm_, *def) || def->isLambda() ||
        std::find(records.begin(), records.end(), def) != records.end()) {
      return;
    }
    records.push_back(def);
    for (const clang::FieldDecl* f : def->fields()) add_type(f->getType());
  }

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

void append_argument(const clang::TemplateArgument& arg, const clang::PrintingPolicy& pp,
                     std::string& out) {
  std::string part;
  switch (arg.getKind()) {
    case clang::TemplateArgument::Integral:
      part = arg.getIntegralType()->isBooleanType()
                 ? (arg.getAsIntegral().getBoolValue() ? "true" : "false")
                 : llvm::toString(arg.getAsIntegral(), 10);
      break;
    case clang::TemplateArgument::Type:
      part = arg.getAsType().getCanonicalType().getAsString(pp);
      if (part.rfind("spmvc::", 0) == 0) part = part.substr(7);
      break;
    case clang::TemplateArgument::Pack:
      for (const auto& element : arg.pack_elements()) append_argument(element, pp, out);
      return;
    default:
      part = "arg";
      break;
  }
  out += '_';
  out += identifier_part(part);
}

// `spmvc::csr::spmv<4, 2, 256, 1, true, int, double, double>` -> `csr_spmv_4_2_256_1_true_int_
// double_double`: the qualified name less the spmvc namespace, then each template argument.
std::string flat_name(const clang::NamedDecl& d, const clang::TemplateArgumentList* args,
                      const clang::PrintingPolicy& pp) {
  std::string name = d.getQualifiedNameAsString();
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
  out = identifier_part(out);
  if (args != nullptr) {
    for (const auto& arg : args->asArray()) append_argument(arg, pp, out);
  }
  return out;
}

std::string flat_name(const clang::FunctionDecl& f, const clang::PrintingPolicy& pp) {
  return flat_name(f, f.getTemplateSpecializationArgs(), pp);
}

std::string flat_name(const clang::CXXRecordDecl& r, const clang::PrintingPolicy& pp) {
  const auto* spec = dyn_cast<clang::ClassTemplateSpecializationDecl>(&r);
  return flat_name(r, spec != nullptr ? &spec->getTemplateArgs() : nullptr, pp);
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
              const std::map<const clang::FunctionDecl*, std::string>& names,
              const std::set<const clang::FunctionDecl*>& members, bool inline_helpers)
      : ctx_(ctx), pp_(pp), names_(names), members_(members), inline_(inline_helpers) {}

  /// Functions some printed call still names (printed as functions): helpers (in inline mode,
  /// only those not printed at their call sites), member functions and constructors.
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
    if (auto* construct = dyn_cast<clang::CXXConstructExpr>(s)) {
      mark(construct->getConstructor());
      return false;
    }
    if (isa<clang::LambdaExpr>(s)) {
      cannot_print("a lambda expression", ctx_.getSourceManager(), s->getBeginLoc());
    }
    if (isa<clang::StmtExpr>(s)) {
      cannot_print("a GNU statement expression", ctx_.getSourceManager(), s->getBeginLoc());
    }
    return false;
  }

  /// Prints `v`'s declaration (no `;`): storage and CUDA memory space, type, name, initialiser.
  void print_variable(const clang::VarDecl& v, llvm::raw_ostream& os) {
    if (v.hasAttr<clang::CUDASharedAttr>()) os << "__shared__ ";
    if (const auto* a = v.getAttr<clang::CUDAConstantAttr>(); a != nullptr && !a->isImplicit())
      os << "__constant__ ";
    if (const auto* a = v.getAttr<clang::CUDADeviceAttr>(); a != nullptr && !a->isImplicit())
      os << "__device__ ";
    if (v.isStaticLocal()) os << "static ";
    clang::QualType type = v.getType();
    if (v.isConstexpr()) {
      os << "constexpr ";
      type.removeLocalConst();  // implied by constexpr
    }
    type.print(os, pp_, v.getName());
    const clang::Expr* init = v.getInit();
    if (init == nullptr) return;
    if (const auto* construct = dyn_cast<clang::CXXConstructExpr>(init->IgnoreImplicit());
        construct != nullptr && !isa<clang::CXXTemporaryObjectExpr>(construct)) {
      // `T v(args)`, `T v{args}` or a default construction: the arguments in the written form.
      mark(construct->getConstructor());
      if (construct->getNumArgs() == 0) return;
      const bool list = construct->isListInitialization();
      os << (list ? "{" : "(");
      for (unsigned i = 0; i < construct->getNumArgs(); ++i) {
        if (i > 0) os << ", ";
        print(construct->getArg(i), os);
      }
      os << (list ? "}" : ")");
      return;
    }
    os << " = ";
    print(init, os);
  }

 private:
  // A call to a printed function takes its flat name; its arguments go through this helper.
  bool print_call(const clang::CallExpr& call, llvm::raw_ostream& os) {
    const clang::FunctionDecl* callee = call.getDirectCallee();
    if (callee == nullptr) return false;
    const clang::FunctionDecl* def = callee->getDefinition();
    const auto it = def != nullptr ? names_.find(def) : names_.end();
    if (it == names_.end()) {
      mark(def);  // a member function or operator: printed as written
      return false;
    }
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
    const std::set<std::string> locals = local_names(def);
    for (unsigned i = 0; i < def.getNumParams(); ++i) {
      const clang::ParmVarDecl* p = def.getParamDecl(i);
      // A variable passed to a parameter the body only reads is used as is: a copy into a
      // local would drop the __restrict__ of the caller's pointer, and the compiler's aliasing
      // (hence its code) could change.
      if (const std::optional<std::string> same =
              passed_through(def, *p, argument(call, i), locals)) {
        saved.emplace_back(p, rename(p, *same));
        continue;
      }
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

  // Names the body of `f` declares.
  static std::set<std::string> local_names(const clang::FunctionDecl& f) {
    class Walk : public clang::RecursiveASTVisitor<Walk> {
     public:
      std::set<std::string> names;
      bool VisitVarDecl(clang::VarDecl* v) {
        names.insert(v->getName().str());
        return true;
      }
    } walk;
    walk.TraverseStmt(f.getBody());
    return walk.names;
  }

  // The text of `arg` when it is a variable that can stand for `p` in f's body: p a scalar or
  // pointer of arg's type the body never writes, takes the address of or passes on by
  // reference, and no local of the body shares arg's name.
  std::optional<std::string> passed_through(const clang::FunctionDecl& f,
                                            const clang::ParmVarDecl& p, const clang::Expr* arg,
                                            const std::set<std::string>& locals) {
    const auto* ref = dyn_cast<clang::DeclRefExpr>(arg->IgnoreParenImpCasts());
    if (ref == nullptr || !isa<clang::VarDecl>(ref->getDecl())) return std::nullopt;
    const clang::QualType pt = p.getType().getCanonicalType().getUnqualifiedType();
    const clang::QualType at = ref->getType().getCanonicalType().getUnqualifiedType();
    if (!(pt->isScalarType()) || pt != at) return std::nullopt;
    class Writes : public clang::RecursiveASTVisitor<Writes> {
     public:
      explicit Writes(const clang::ParmVarDecl& param) : p(param) {}
      const clang::ParmVarDecl& p;
      bool written = false;
      bool names_p(const clang::Expr* e) const {
        const auto* r = dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts());
        return r != nullptr && r->getDecl() == &p;
      }
      bool VisitBinaryOperator(clang::BinaryOperator* op) {
        if (op->isAssignmentOp() && names_p(op->getLHS())) written = true;
        return true;
      }
      bool VisitUnaryOperator(clang::UnaryOperator* op) {
        if ((op->isIncrementDecrementOp() || op->getOpcode() == clang::UO_AddrOf) &&
            names_p(op->getSubExpr()))
          written = true;
        return true;
      }
      bool VisitCallExpr(clang::CallExpr* call) {
        const clang::FunctionDecl* callee = call->getDirectCallee();
        for (unsigned i = 0; i < call->getNumArgs(); ++i) {
          if (!names_p(call->getArg(i))) continue;
          if (callee == nullptr || i >= callee->getNumParams() ||
              callee->getParamDecl(i)->getType()->isReferenceType())
            written = true;
        }
        return true;
      }
    } writes(p);
    writes.TraverseStmt(f.getBody());
    if (writes.written) return std::nullopt;
    std::string text;
    llvm::raw_string_ostream os(text);
    print(ref, os);
    os.flush();
    if (locals.count(text) != 0) return std::nullopt;
    return text;
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

  void mark(const clang::FunctionDecl* f) {
    if (f == nullptr) return;
    const clang::FunctionDecl* def = f->getDefinition();
    if (def != nullptr && members_.count(def) != 0) needed_.insert(def);
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
        print_variable(*v, os);
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
        cannot_print("a local " + std::string(d->getDeclKindName()) + " declaration",
                     ctx_.getSourceManager(), d->getLocation());
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
  const std::set<const clang::FunctionDecl*>& members_;
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

namespace {

// Structs in an order where each follows those it holds by value.
std::vector<const clang::CXXRecordDecl*> by_value_order(
    const std::vector<const clang::CXXRecordDecl*>& records) {
  std::vector<const clang::CXXRecordDecl*> out;
  std::set<const clang::CXXRecordDecl*> done;
  std::function<void(const clang::CXXRecordDecl*)> visit = [&](const clang::CXXRecordDecl* r) {
    if (!done.insert(r).second) return;
    for (const clang::FieldDecl* f : r->fields()) {
      clang::QualType t = f->getType().getCanonicalType();
      while (const clang::ArrayType* a = t->getAsArrayTypeUnsafe())
        t = a->getElementType().getCanonicalType();
      const clang::CXXRecordDecl* held = t->getAsCXXRecordDecl();
      if (held != nullptr && held->getDefinition() != nullptr &&
          std::find(records.begin(), records.end(), held->getDefinition()) != records.end()) {
        visit(held->getDefinition());
      }
    }
    out.push_back(r);
  };
  for (const auto* r : records) visit(r);
  return out;
}

// Replaces every occurrence of `from` in `text` with `to`.
void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
}

}  // namespace

KernelSource flatten(const KernelSource& src, const FlattenOptions& options) {
  const std::unique_ptr<clang::ASTUnit> ast = detail::parse_cuda(src);
  const clang::ASTContext& ctx = ast->getASTContext();
  const clang::SourceManager& sm = ctx.getSourceManager();
  const std::vector<const clang::FunctionDecl*> entries = detail::entry_points(*ast, src);

  clang::PrintingPolicy pp(ctx.getLangOpts());
  pp.PrintCanonicalTypes = true;
  pp.Bool = true;

  Collector collector(sm);
  for (const clang::FunctionDecl* entry : entries) collector.collect(*entry);
  std::map<const clang::FunctionDecl*, std::string> names;  // free functions: flat names
  std::set<const clang::FunctionDecl*> members;             // member functions, constructors
  std::set<std::string> used;
  for (const clang::FunctionDecl* entry : entries) used.insert(entry->getNameAsString());
  std::map<const clang::CXXRecordDecl*, std::string> record_names;
  for (const clang::CXXRecordDecl* r : collector.records) {
    if (r->getNumBases() != 0 || r->isUnion()) {
      cannot_print(r->isUnion() ? "a union" : "a struct with a base class", sm, r->getLocation());
    }
    std::string name = flat_name(*r, pp);
    for (int i = 2; used.count(name) != 0; ++i) name = flat_name(*r, pp) + "_" + std::to_string(i);
    used.insert(name);
    record_names[r] = name;
  }
  for (const clang::FunctionDecl* f : collector.order) {
    if (isa<clang::CXXMethodDecl>(f)) {
      const auto* m = cast<clang::CXXMethodDecl>(f);
      if (m->getParent()->isLambda())
        cannot_print("a lambda expression", sm, m->getParent()->getLocation());
      if (record_names.count(m->getParent()->getDefinition()) == 0) {
        cannot_print("a member of " + m->getParent()->getQualifiedNameAsString(), sm,
                     f->getLocation());
      }
      if (isa<clang::CXXConversionDecl>(f) || isa<clang::CXXDestructorDecl>(f)) {
        cannot_print("a conversion operator or destructor", sm, f->getLocation());
      }
      members.insert(f);
      continue;
    }
    std::string name = flat_name(*f, pp);
    for (int i = 2; used.count(name) != 0; ++i) name = flat_name(*f, pp) + "_" + std::to_string(i);
    used.insert(name);
    names[f] = name;
  }

  FlatPrinter printer(ctx, pp, names, members, options.inline_helpers);
  // The entry points first: they decide which helpers and members some call still names.
  std::string entry_code;
  {
    llvm::raw_string_ostream es(entry_code);
    for (const clang::FunctionDecl* entry : entries) {
      es << "extern \"C\" __global__ void ";
      if (const auto* bounds = entry->getAttr<clang::CUDALaunchBoundsAttr>()) {
        es << "__launch_bounds__("
           << llvm::toString(bounds->getMaxThreads()->EvaluateKnownConstInt(ctx), 10);
        if (bounds->getMinBlocks() != nullptr) {
          es << ", " << llvm::toString(bounds->getMinBlocks()->EvaluateKnownConstInt(ctx), 10);
        }
        es << ") ";
      }
      es << entry->getName();
      printer.print_params(*entry, es);
      es << " ";
      printer.print(entry->getBody(), es);
      es << "\n";
    }
  }
  // Helpers and members, callees before callers; printing one may make others needed, hence the
  // fixpoint. Members are defined out of their struct, which declares them.
  std::map<const clang::FunctionDecl*, std::string> function_code;
  for (bool more = true; more;) {
    more = false;
    for (const clang::FunctionDecl* f : collector.order) {
      if (function_code.count(f) != 0 || printer.needed().count(f) == 0) continue;
      std::string code_f;
      llvm::raw_string_ostream fs(code_f);
      fs << "__device__ __forceinline__ ";
      const auto* method = dyn_cast<clang::CXXMethodDecl>(f);
      if (method == nullptr) {
        f->getReturnType().print(fs, pp);
        fs << " " << names[f];
        printer.print_params(*f, fs);
      } else {
        const std::string& owner = record_names[method->getParent()->getDefinition()];
        if (isa<clang::CXXConstructorDecl>(f)) {
          fs << owner << "::" << owner;
        } else {
          f->getReturnType().print(fs, pp);
          fs << " " << owner << "::" << f->getNameAsString();
        }
        printer.print_params(*f, fs);
        if (method->isConst()) fs << " const";
        if (const auto* ctor = dyn_cast<clang::CXXConstructorDecl>(f)) {
          bool first = true;
          for (const clang::CXXCtorInitializer* init : ctor->inits()) {
            if (!init->isWritten()) continue;
            if (!init->isMemberInitializer()) {
              cannot_print("a constructor's base or delegating initialiser", sm,
                           init->getSourceLocation());
            }
            fs << (first ? " : " : ", ") << init->getMember()->getName() << "(";
            printer.print(init->getInit(), fs);
            fs << ")";
            first = false;
          }
        }
      }
      fs << " ";
      printer.print(f->getBody(), fs);
      fs << "\n";
      fs.flush();
      function_code[f] = code_f;
      more = true;
    }
  }

  std::string code;
  llvm::raw_string_ostream os(code);
  os << banner(src.source) << "//\n// Flattened by `spmvc emit --flatten`: "
     << (options.inline_helpers
             ? "the entry points with every helper's body printed at its\n// call site, "
             : "each function the entry points reach, printed\n// ")
     << "with compile-time parameters as values and only the branches they select.\n"
        "// Standalone: it needs no spmvc header.\n\n";
  // Functions the code calls that it declares but does not define.
  for (const clang::FunctionDecl* f : collector.externs) {
    os << "extern \"C\" __device__ ";
    f->getReturnType().print(os, pp);
    os << " " << f->getName() << "(";
    for (unsigned i = 0; i < f->getNumParams(); ++i) {
      if (i > 0) os << ", ";
      f->getParamDecl(i)->getType().print(os, pp);
    }
    os << ");\n\n";
  }
  // Namespace-scope variables the code reads (__constant__ tables, the row map).
  for (const clang::VarDecl* v : collector.globals) {
    if (v->isExternC()) os << "extern \"C\" {\n";
    printer.print_variable(*v, os);
    os << ";\n";
    if (v->isExternC()) os << "}\n";
    os << "\n";
  }
  // Structs: all declared first, then defined, each after those it holds by value; their
  // member functions are declared inside and defined below with the helpers.
  const std::vector<const clang::CXXRecordDecl*> records = by_value_order(collector.records);
  for (const clang::CXXRecordDecl* r : records) os << "struct " << record_names[r] << ";\n";
  if (!records.empty()) os << "\n";
  for (const clang::CXXRecordDecl* r : records) {
    os << "struct " << record_names[r] << " {\n";
    for (const clang::FieldDecl* field : r->fields()) {
      if (field->isBitField()) cannot_print("a bit-field", sm, field->getLocation());
      field->getType().print(os, pp, field->getName());
      if (const clang::Expr* init = field->getInClassInitializer()) {
        os << " = ";
        printer.print(init, os);
      }
      os << ";\n";
    }
    for (const clang::FunctionDecl* f : collector.order) {
      const auto* method = dyn_cast<clang::CXXMethodDecl>(f);
      if (method == nullptr || method->getParent()->getDefinition() != r ||
          function_code.count(f) == 0) {
        continue;
      }
      os << "__device__ ";
      if (method->isStatic()) os << "static ";
      if (isa<clang::CXXConstructorDecl>(f)) {
        os << record_names[r];
      } else {
        f->getReturnType().print(os, pp);
        os << " " << f->getNameAsString();
      }
      printer.print_params(*f, os);
      if (method->isConst()) os << " const";
      os << ";\n";
    }
    os << "};\n\n";
  }
  for (const clang::FunctionDecl* f : collector.order) {
    if (const auto it = function_code.find(f); it != function_code.end()) os << it->second;
  }
  os << entry_code;
  os.flush();

  // Types print in their canonical spelling (`spmvc::TableValues<double, unsigned char>`):
  // each struct takes its flat name, the longest spellings first so that a struct named
  // inside another's template arguments is replaced after it.
  std::vector<std::pair<std::string, std::string>> spellings;
  for (const auto& [r, name] : record_names) {
    spellings.emplace_back(
        clang::QualType(r->getTypeForDecl(), 0).getCanonicalType().getAsString(pp), name);
  }
  std::sort(spellings.begin(), spellings.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  const std::size_t body_start = code.find("\n\n");
  std::string head = code.substr(0, body_start), body = code.substr(body_start);
  for (const auto& [from, to] : spellings) {
    if (from != to) replace_all(body, from, to);
  }
  // Anything still spelled in a namespace or as a template is a construct the printer missed.
  static const std::regex leftover(R"((spmvc::|\(anonymous namespace\)|\btemplate\b)[^;\n]*)");
  // (string literals, such as static_assert messages, are prose, not code)
  static const std::regex literal(R"("([^"\\\n]|\\.)*")");
  const std::string code_only = std::regex_replace(body, literal, "\"\"");
  std::smatch m;
  if (std::regex_search(code_only, m, leftover)) {
    throw InternalError(
        fmt::format("flatten: cannot print `{}` in {} yet", m.str(), src.file_name));
  }
  code = head + body;

  KernelSource out = src;
  out.source = options.format ? clang_format(code, src.file_name) : code;
  out.headers.clear();
  const auto dot = src.file_name.rfind(".cu");
  out.file_name =
      (dot == std::string::npos ? src.file_name : src.file_name.substr(0, dot)) + ".flat.cu";
  return out;
}

}  // namespace spmvc::tooling
