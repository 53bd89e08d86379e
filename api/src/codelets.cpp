#include "codelets.h"

#include "compiler/codegen/portable_optimise.h"
#include "runtime/bitcode_gate.h"
#include "runtime/jit.h"
#include "support/error.h"
#include "support/file_io.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <mutex>
#include <set>
#include <cstring>

extern char **environ;

namespace popc::api::detail {

namespace fs = std::filesystem;

// ------------------------------------------------------------------ classes

const CodeletField *CodeletClass::field(const std::string &n) const {
  for (const CodeletField &f : fields)
    if (f.name == n)
      return &f;
  return nullptr;
}

std::string CodeletClass::describeFields() const {
  std::string s;
  for (const CodeletField &f : fields)
    s += (s.empty() ? "" : ", ") + f.name;
  return " (fields: " + (s.empty() ? "none" : s) + ")";
}

namespace {

std::string readFile(const std::string &path) { return std::string(readWholeFile(path).view()); }

std::optional<Type> typeFromCpp(const std::string &t) {
  static const std::map<std::string, Type> names = {
      {"float", Type::FLOAT}, {"double", Type::DOUBLE}, {"half", Type::HALF},
      {"int", Type::INT}, {"unsigned int", Type::UNSIGNED_INT},
      {"short", Type::SHORT}, {"unsigned short", Type::UNSIGNED_SHORT}, {"char", Type::CHAR},
      {"signed char", Type::CHAR}, {"unsigned char", Type::UNSIGNED_CHAR}, {"bool", Type::BOOL},
      {"long long", Type::LONGLONG}, {"long", Type::LONGLONG},
      {"unsigned long long", Type::UNSIGNED_LONGLONG}, {"unsigned long", Type::UNSIGNED_LONGLONG}};
  auto it = names.find(t);
  if (it == names.end())
    return std::nullopt;
  return it->second;
}

// A C++ type as clang spells it, e.g. "popc::Input<popc::Vector<float>>":
// its template name without namespaces ("Input") and its arguments.
struct TypeTerm {
  std::string name;
  std::vector<TypeTerm> args;
};

TypeTerm parseTypeTerm(const std::string &text, size_t &pos) {
  TypeTerm t;
  const size_t start = pos;
  while (pos < text.size() && text[pos] != '<' && text[pos] != '>' && text[pos] != ',')
    ++pos;
  t.name = text.substr(start, pos - start);
  while (!t.name.empty() && t.name.back() == ' ')
    t.name.pop_back();
  while (!t.name.empty() && t.name.front() == ' ')
    t.name.erase(0, 1);
  if (t.name.starts_with("const "))
    t.name.erase(0, 6);
  if (const size_t colon = t.name.rfind("::"); colon != std::string::npos)
    t.name = t.name.substr(colon + 2);
  if (pos < text.size() && text[pos] == '<') {
    ++pos;
    for (;;) {
      t.args.push_back(parseTypeTerm(text, pos));
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == '>')
        ++pos;
      break;
    }
  }
  return t;
}

TypeTerm parseTypeTerm(const std::string &text) {
  size_t pos = 0;
  return parseTypeTerm(text, pos);
}

using Json = nlohmann::json;

// Walks clang's JSON AST in print order, tracking the file of the current
// location (the dump names a file only where it changes), and describes the
// classes deriving from Vertex that `userFile` defines.
class VertexClassFinder {
public:
  VertexClassFinder(std::string userFile, std::string path) : userFile_(std::move(userFile)), path_(std::move(path)) {}

  std::vector<CodeletClass> classes;

  void walk(const Json &node) {
    noteLocation(node);
    const std::string kind = node.value("kind", "");
    if (kind == "CXXRecordDecl" && file_ == userFile_ && node.value("completeDefinition", false) &&
        derivesFromVertex(node))
      classes.push_back(describe(node));
    const bool isNamespace = kind == "NamespaceDecl";
    if (isNamespace)
      scope_.push_back(node.value("name", ""));
    if (auto inner = node.find("inner"); inner != node.end() && inner->is_array())
      for (const Json &child : *inner)
        walk(child);
    if (isNamespace)
      scope_.pop_back();
  }

private:
  void noteFile(const Json &loc) {
    if (!loc.is_object())
      return;
    if (auto f = loc.find("file"); f != loc.end() && f->is_string())
      file_ = f->get<std::string>();
    for (const char *k : {"spellingLoc", "expansionLoc"})
      if (auto sub = loc.find(k); sub != loc.end())
        noteFile(*sub);
  }
  void noteLocation(const Json &node) {
    if (auto loc = node.find("loc"); loc != node.end())
      noteFile(*loc);
    if (auto range = node.find("range"); range != node.end() && range->is_object())
      for (const char *k : {"begin", "end"})
        if (auto at = range->find(k); at != range->end())
          noteFile(*at);
  }

  // Typedefs resolved: clang's desugared spelling when it has one.
  static std::string typeText(const Json &type) {
    if (auto d = type.find("desugaredQualType"); d != type.end() && d->is_string())
      return d->get<std::string>();
    return type.value("qualType", "");
  }

  static bool derivesFromVertex(const Json &record) {
    auto bases = record.find("bases");
    if (bases == record.end() || !bases->is_array())
      return false;
    for (const Json &b : *bases)
      if (b.contains("type") && parseTypeTerm(typeText(b["type"])).name == "Vertex")
        return true;
    return false;
  }

  CodeletClass describe(const Json &record) {
    CodeletClass c;
    c.name = record.value("name", "");
    for (const std::string &ns : scope_)
      c.cppName += ns + "::";
    c.cppName += c.name;
    // Members before any access specifier are private in a class, public in a struct.
    std::string access = record.value("tagUsed", "class") == "struct" ? "public" : "private";
    // The generated entry constructs the class, binds its fields and calls
    // compute() (and getCycleEstimate()): they must be public.
    auto requirePublic = [&](const std::string &what) {
      if (access != "public")
        fail("{}: class {}: {} is {}; declare the fields, compute() and getCycleEstimate() under `public:`", path_,
             c.name, what, access);
    };
    if (auto inner = record.find("inner"); inner != record.end() && inner->is_array())
      for (const Json &member : *inner) {
        const std::string kind = member.value("kind", "");
        const std::string name = member.value("name", "");
        if (kind == "AccessSpecDecl")
          access = member.value("access", access);
        if (kind == "CXXMethodDecl" && (name == "compute" || name == "getCycleEstimate"))
          requirePublic(name + "()");
        if (kind == "CXXMethodDecl" && name == "getCycleEstimate")
          c.hasEstimate = true;
        if (kind == "FieldDecl" && member.contains("type") && addField(c, name, typeText(member["type"])))
          requirePublic(fmt::format("field '{}'", name));
      }
    return c;
  }

  // Adds an Input/Output/InOut member as a field; false for any other member.
  bool addField(CodeletClass &c, const std::string &name, const std::string &type) {
    const TypeTerm t = parseTypeTerm(type);
    if ((t.name != "Input" && t.name != "Output" && t.name != "InOut") || t.args.size() != 1)
      return false; // a plain member: not a field the graph connects
    CodeletField f;
    f.name = name;
    f.access = t.name == "Input"    ? codegen::FieldAccess::Input
               : t.name == "Output" ? codegen::FieldAccess::Output
                                    : codegen::FieldAccess::InOut;
    const TypeTerm &arg = t.args[0];
    if (arg.name == "VectorList")
      fail("{}: class {} field '{}': VectorList fields are not supported; use one Vector field per list entry", path_,
           c.name, name);
    f.vector = arg.name == "Vector" && !arg.args.empty();
    const std::string elem = f.vector ? arg.args[0].name : arg.name;
    auto et = typeFromCpp(elem);
    if (!et || *et == Type::HALF)
      fail("{}: class {} field '{}': element type '{}' is not supported (use float, double, int, unsigned, "
           "short, char, bool, long long and their unsigned forms)",
           path_, c.name, name, elem);
    f.elemType = *et;
    c.fields.push_back(f);
    return true;
  }

  std::string userFile_, path_, file_;
  std::vector<std::string> scope_; // enclosing namespaces
};

std::string encodeClass(const CodeletClass &c) {
  std::string s = c.name + "|" + (c.hasEstimate ? "1" : "0") + "|";
  for (const CodeletField &f : c.fields)
    s += fmt::format("{}:{}:{}:{},", f.name, int(f.access), f.vector ? 1 : 0, int(f.elemType));
  return s;
}

CodeletClass decodeClass(const std::string &s) {
  CodeletClass c;
  const size_t a = s.find('|'), b = s.find('|', a + 1);
  c.name = s.substr(0, a);
  c.hasEstimate = s.substr(a + 1, b - a - 1) == "1";
  std::stringstream fields(s.substr(b + 1));
  std::string item;
  while (std::getline(fields, item, ',')) {
    if (item.empty())
      continue;
    std::stringstream parts(item);
    std::string name, access, vec, type;
    std::getline(parts, name, ':');
    std::getline(parts, access, ':');
    std::getline(parts, vec, ':');
    std::getline(parts, type, ':');
    c.fields.push_back({name, codegen::FieldAccess(std::stoi(access)), vec == "1", Type(std::stoi(type))});
  }
  return c;
}

// The directory holding popc/Vertex.hpp: next to an installed library
// (<prefix>/lib/../include), else the source tree this was built from.
std::string includeDir() {
  if (const char *env = std::getenv("POPC_CODELET_INCLUDE"))
    return env;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&includeDir), &info) && info.dli_fname) {
    fs::path lib = fs::path(info.dli_fname).parent_path();
    for (fs::path cand : {lib / ".." / "include", lib / ".." / ".." / "include"})
      if (fs::exists(cand / "popc" / "Vertex.hpp"))
        return fs::weakly_canonical(cand).string();
  }
  return POPC_API_SOURCE_INCLUDE_DIR;
}

std::string clangPath() {
  if (const char *env = std::getenv("POPC_CLANG"))
    return env;
  if (fs::exists(POPC_API_CLANG))
    return POPC_API_CLANG;
  return "clang++-19";
}

// Runs argv; returns exit status, stderr in `err` (written through errFile),
// stdout into `outFile`.
int run(const std::vector<std::string> &argv, std::string &err, const fs::path &errFile,
        const fs::path &outFile = "/dev/null") {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, errFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 1, outFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    fail("cannot run '{}' to compile codelets: {} (install clang-19 or set POPC_CLANG)", argv[0], std::strerror(rc));
  int status = 0;
  waitpid(pid, &status, 0);
  err = fs::exists(errFile) ? readFile(errFile.string()) : "";
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "popc-codelet-XXXXXX").string();
    if (!mkdtemp(tmpl.data()))
      fail("cannot create a temporary directory in {}", fs::temp_directory_path().string());
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::unique_ptr<llvm::Module> parse(llvm::LLVMContext &ctx, const std::vector<uint8_t> &bc, const std::string &where) {
  auto buf = llvm::MemoryBuffer::getMemBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(bc.data()), bc.size()), where, false);
  auto m = llvm::parseBitcodeFile(buf->getMemBufferRef(), ctx);
  if (!m)
    fail("{}: not a valid codelet bitcode file: {}", where, llvm::toString(m.takeError()));
  return std::move(*m);
}

std::vector<uint8_t> write(const llvm::Module &m) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::WriteBitcodeToFile(m, os);
  return {buffer.begin(), buffer.end()};
}

bool isBitcode(const std::string &bytes) {
  return bytes.size() >= 4 && uint8_t(bytes[0]) == 'B' && uint8_t(bytes[1]) == 'C' && uint8_t(bytes[2]) == 0xC0 &&
         uint8_t(bytes[3]) == 0xDE;
}

std::vector<CodeletClass> readClasses(const llvm::Module &m, const std::string &where) {
  const llvm::NamedMDNode *md = m.getNamedMetadata("popc.codelets");
  if (!md)
    fail("{}: bitcode without popc codelet descriptions: precompile codelets with popc-codelet", where);
  std::vector<CodeletClass> out;
  for (const llvm::MDNode *n : md->operands())
    out.push_back(decodeClass(llvm::cast<llvm::MDString>(n->getOperand(0))->getString().str()));
  return out;
}

// Arrays the generic entries take: field pointers (from the tile) and sizes.
llvm::Function *addCaller(llvm::Module &m, const std::string &name, llvm::Function *callee,
                          const std::vector<uint32_t> &bytes, bool vertexAbi) {
  llvm::LLVMContext &ctx = m.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  llvm::Type *i32 = llvm::Type::getInt32Ty(ctx), *i64 = llvm::Type::getInt64Ty(ctx), *i8 = llvm::Type::getInt8Ty(ctx);
  auto *fty = vertexAbi ? llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr}, false)
                        : llvm::FunctionType::get(i64, {}, false);
  auto *f = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, name, m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  const unsigned n = unsigned(bytes.size());
  auto *ptrArray = llvm::ArrayType::get(ptr, std::max(1u, n));
  auto *sizeArray = llvm::ArrayType::get(i32, std::max(1u, n));
  llvm::Value *ptrs = b.CreateAlloca(ptrArray);
  llvm::Value *sizes = b.CreateAlloca(sizeArray);
  for (unsigned i = 0; i < n; ++i) {
    llvm::Value *p = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(ctx));
    if (vertexAbi) {
      llvm::Value *off = b.CreateLoad(i32, b.CreateConstInBoundsGEP1_32(i32, f->getArg(1), i));
      p = b.CreateInBoundsGEP(i8, f->getArg(0), b.CreateZExt(off, i64));
    }
    b.CreateStore(p, b.CreateConstInBoundsGEP2_32(ptrArray, ptrs, 0, i));
    b.CreateStore(b.getInt32(bytes[i]), b.CreateConstInBoundsGEP2_32(sizeArray, sizes, 0, i));
  }
  llvm::Value *r = b.CreateCall(callee, {ptrs, sizes});
  if (vertexAbi)
    b.CreateRetVoid();
  else
    b.CreateRet(r);
  return f;
}

} // namespace

// ------------------------------------------------------------------ compile

namespace {

// clang++ with the codelet flags (and the user's --flags) on `inputs`.
std::vector<std::string> clangCommand(const std::string &path, const std::string &flags,
                                      const std::vector<std::string> &inputs) {
  std::vector<std::string> argv = {clangPath(), "-std=c++20", "-O2", "-ffreestanding", "-fno-exceptions", "-fno-rtti",
                                   "-fno-math-errno", "-fno-stack-protector", "-fno-unwind-tables",
                                   "-fno-asynchronous-unwind-tables", "-fno-vectorize", "-fno-slp-vectorize",
                                   "-fno-unroll-loops", "-fno-color-diagnostics", "-I" + includeDir(),
                                   "-I" + fs::absolute(path).parent_path().string()};
  std::istringstream extra(flags);
  for (std::string f; extra >> f;)
    argv.push_back(f);
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  return argv;
}

// Runs a clang command; on failure, clang's first error line (it names the
// user's file and line), then all of its diagnostics.
void runClang(const std::vector<std::string> &argv, const std::string &path, const TempDir &tmp,
              const fs::path &outFile = "/dev/null") {
  std::string err;
  if (run(argv, err, tmp.path / "stderr.txt", outFile) == 0)
    return;
  std::string first;
  std::istringstream lines(err);
  for (std::string l; std::getline(lines, l);)
    if (l.find("error:") != std::string::npos) {
      first = l;
      break;
    }
  fail("{}\n{}: codelet compile failed (clang's diagnostics above)", first.empty() ? err : first + "\n" + err, path);
}

// The vertex classes of the user's file, as clang's AST describes them:
// classes deriving from Vertex, their Input/Output/InOut fields in order, and
// whether they declare getCycleEstimate.
std::vector<CodeletClass> describeClasses(const std::string &path, const std::string &flags, const TempDir &tmp) {
  const std::string userFile = fs::absolute(path).string();
  const fs::path tuPath = tmp.path / "codelet_ast.cpp", astPath = tmp.path / "codelet_ast.json";
  std::ofstream(tuPath) << "#include \"popc/Vertex.hpp\"\n#include \"" + userFile + "\"\n";
  runClang(clangCommand(path, flags, {"-fsyntax-only", "-Xclang", "-ast-dump=json", tuPath.string()}), path, tmp,
           astPath);
  Json ast;
  try {
    ast = Json::parse(readFile(astPath.string()));
  } catch (const Json::exception &e) {
    fail("{}: cannot read clang's description of the codelet classes: {}", path, e.what());
  }
  VertexClassFinder finder(userFile, path);
  finder.walk(ast);
  if (finder.classes.empty())
    fail("{}: no vertex class found: a codelet is `class Name : public poplar::Vertex {{ ... bool compute(); }};`", path);
  return std::move(finder.classes);
}

} // namespace

std::vector<uint8_t> compileCodeletFile(const std::string &path, const std::string &flags) {
  if (!fs::is_regular_file(path)) // a clear error for a missing file, before clang's
    (void)readWholeFile(path);
  TempDir tmp;
  std::vector<CodeletClass> classes = describeClasses(path, flags, tmp);
  // The user's file is #included (not copied) so diagnostics name it and its lines.
  std::string tu = "#include \"popc/Vertex.hpp\"\n#include \"" + fs::absolute(path).string() + "\"\n";
  for (const CodeletClass &c : classes) {
    std::string binds;
    for (size_t i = 0; i < c.fields.size(); ++i)
      binds += fmt::format("  popc_codelet::bind(v.{}, p[{}], b[{}]);\n", c.fields[i].name, i, i);
    tu += fmt::format("extern \"C\" void __popc_run_{0}(void *const *p, const uint32_t *b) {{\n  {2} v;\n{1}"
                      "  (void)v.compute();\n}}\n", c.name, binds, c.cppName);
    if (c.hasEstimate)
      tu += fmt::format("extern \"C\" uint64_t __popc_estimate_{0}(void *const *p, const uint32_t *b) {{\n  {2} v;\n{1}"
                        "  return (uint64_t)v.getCycleEstimate();\n}}\n", c.name, binds, c.cppName);
  }
  const fs::path tuPath = tmp.path / "codelet_entries.cpp", bcPath = tmp.path / "codelet.bc";
  std::ofstream(tuPath) << tu;
  runClang(clangCommand(path, flags, {"-emit-llvm", "-c", tuPath.string(), "-o", bcPath.string()}), path, tmp);
  const std::string bc = readFile(bcPath.string());
  llvm::LLVMContext ctx;
  auto m = parse(ctx, std::vector<uint8_t>(bc.begin(), bc.end()), path);
  llvm::NamedMDNode *md = m->getOrInsertNamedMetadata("popc.codelets");
  for (const CodeletClass &c : classes)
    md->addOperand(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, encodeClass(c))}));
  m->setSourceFileName(fs::path(path).filename().string());
  m->setModuleIdentifier(fs::path(path).filename().string());
  return write(*m);
}

// ------------------------------------------------------------------ library

CodeletLibrary::CodeletLibrary() = default;
CodeletLibrary::~CodeletLibrary() = default;

void CodeletLibrary::addFile(const std::string &path, const std::string &flags) {
  const std::string bytes = readFile(path);
  if (isBitcode(bytes))
    addBitcode(std::vector<uint8_t>(bytes.begin(), bytes.end()), path);
  else
    addBitcode(compileCodeletFile(path, flags), path);
}

void CodeletLibrary::addSource(const std::string &source, const std::string &name) {
  TempDir tmp;
  const fs::path p = tmp.path / fs::path(name).filename();
  std::ofstream(p) << source;
  addBitcode(compileCodeletFile(p.string(), ""), name);
}

void CodeletLibrary::addBitcode(std::vector<uint8_t> bitcode, const std::string &where) {
  llvm::LLVMContext ctx;
  auto m = parse(ctx, bitcode, where);
  std::vector<CodeletClass> classes = readClasses(*m, where);
  for (CodeletClass &c : classes) {
    if (find(c.name))
      fail("{}: vertex class '{}' is already loaded from another codelet file", where, c.name);
    c.module = modules_.size();
    classes_.push_back(std::move(c));
  }
  modules_.push_back(std::move(bitcode));
}

const CodeletClass *CodeletLibrary::find(const std::string &name) const {
  for (const CodeletClass &c : classes_)
    if (c.name == name)
      return &c;
  return nullptr;
}

std::string CodeletLibrary::describeClasses() const {
  std::string s;
  for (const CodeletClass &c : classes_)
    s += (s.empty() ? "" : ", ") + c.name;
  return s.empty() ? "" : " (loaded: " + s + ")";
}

uint64_t CodeletLibrary::estimate(const CodeletClass &c, const std::vector<uint32_t> &bytes) {
  if (!c.hasEstimate) {
    // Default: a call overhead plus one cycle per element of each vector field.
    uint64_t cycles = 10;
    for (size_t i = 0; i < c.fields.size(); ++i)
      if (c.fields[i].vector)
        cycles += bytes[i] / typeSize(c.fields[i].elemType);
    return cycles;
  }
  auto key = std::make_pair(c.name, bytes);
  if (auto it = estimates_.find(key); it != estimates_.end())
    return it->second;
  using EstimateFn = uint64_t (*)(void *const *, const uint32_t *);
  auto fit = estimateFns_.find(c.name);
  if (fit == estimateFns_.end()) {
    // One JIT per codelet file, holding its generic estimators (called with
    // null field pointers). The file passes the same bitcode gate and JIT as
    // vertex code (runtime/): allow-listed calls only, no process symbols.
    if (jits_.size() <= c.module)
      jits_.resize(c.module + 1);
    const std::string symbol = "__popc_estimate_" + c.name;
    if (!jits_[c.module]) {
      auto ctx = std::make_unique<llvm::LLVMContext>();
      auto m = runtime::loadCodeModule(*ctx, modules_[c.module], c.name + ": getCycleEstimate", {});
      auto jit = std::make_unique<runtime::Jit>();
      jit->addModule(std::move(m), std::move(ctx), c.name + ": getCycleEstimate");
      jits_[c.module] = std::move(jit);
    }
    // (The gate checks vertex entries' types; an estimator is called as EstimateFn.)
    fit = estimateFns_
              .emplace(c.name, reinterpret_cast<void *>(jits_[c.module]->lookup(symbol, c.name + ": getCycleEstimate")))
              .first;
  }
  std::vector<void *> nulls(std::max<size_t>(1, bytes.size()), nullptr);
  const uint64_t cycles = reinterpret_cast<EstimateFn>(fit->second)(nulls.data(), bytes.data());
  estimates_[key] = cycles;
  return cycles;
}

std::vector<uint8_t> CodeletLibrary::buildVertexModule(const std::vector<UserVertexType> &types) const {
  llvm::LLVMContext ctx;
  auto dst = std::make_unique<llvm::Module>("popc_user_codelets", ctx);
  for (size_t i = 0; i < modules_.size(); ++i) {
    auto m = parse(ctx, modules_[i], "codelets");
    m->setTargetTriple("");
    m->setDataLayout("");
    if (llvm::Linker::linkModules(*dst, std::move(m)))
      fail("codelets: linking codelet file {} failed (duplicate definitions?)", i);
  }
  std::set<std::string> entries;
  for (const UserVertexType &t : types) {
    llvm::Function *run = dst->getFunction("__popc_run_" + t.cls);
    if (!run)
      fail("codelets: vertex class '{}' has no entry in its module", t.cls);
    addCaller(*dst, t.symbol, run, t.fieldBytes, true);
    entries.insert(t.symbol);
  }
  for (llvm::Function &f : *dst) {
    for (const char *attr : {"target-cpu", "target-features", "tune-cpu"})
      f.removeFnAttr(attr);
    if (f.isDeclaration() || entries.count(f.getName().str()))
      continue;
    f.setLinkage(llvm::GlobalValue::InternalLinkage);
    f.setComdat(nullptr);
    f.removeFnAttr(llvm::Attribute::NoInline);
    f.removeFnAttr(llvm::Attribute::OptimizeNone);
    f.addFnAttr(llvm::Attribute::AlwaysInline);
  }
  for (llvm::GlobalVariable &g : dst->globals())
    if (!g.isDeclaration()) {
      g.setLinkage(llvm::GlobalValue::InternalLinkage);
      g.setComdat(nullptr);
    }
  for (const char *md : {"popc.codelets", "llvm.ident"})
    if (auto *n = dst->getNamedMetadata(md))
      dst->eraseNamedMetadata(n);
  codegen::optimisePortable(*dst); // as generated vertices get: inlines every helper into the entries
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(*dst, &os))
    fail("codelets: internal error: user vertex module invalid: {}", os.str());
  return write(*dst);
}

std::vector<uint8_t> linkBitcode(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b) {
  llvm::LLVMContext ctx;
  auto ma = parse(ctx, a, "vertex code");
  auto mb = parse(ctx, b, "user codelets");
  mb->setTargetTriple(ma->getTargetTriple());
  mb->setDataLayout(ma->getDataLayout());
  if (llvm::Linker::linkModules(*ma, std::move(mb)))
    fail("codelets: linking user codelets with the generated vertex code failed");
  return write(*ma);
}

} // namespace popc::api::detail
