/* Unit tests for the stderr classifier. The fixtures are real stderr texts,
 * captured by running small failing programs with Debian's /usr/bin/python3
 * (3.11), /usr/bin/node (v20) and bash 5.2 (network failures inside an
 * `unshare -n` namespace, read-only files under a read-only bind mount,
 * permission errors as user nobody), so the parsers are held to what the
 * interpreters really print, not to what we remember them printing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "exec/classify.h"

/* ------------------------------------------------------------ fixtures --- */

/* exit status 127 */
static const char bash_cnf[] =
    "main.sh: line 2: foo_tool: command not found\n";

/* exit status 6 */
static const char bash_curl[] =
    "curl: (6) Could not resolve host: example.com\n";

/* exit status 3 */
static const char bash_empty[] =
    "";

/* exit status 2 */
static const char bash_eof[] =
    "main.sh: line 3: syntax error: unexpected end of file\n";

/* exit status 1 */
static const char bash_erofs[] =
    "main.sh: line 1: /tmp/cap/ro/o.txt: Read-only file system\n";

/* exit status 1 */
static const char bash_nofile[] =
    "cat: data.csv: No such file or directory\n";

/* exit status 4 */
static const char bash_nul[] =
    "partial\000line \377\n";

/* exit status 1 */
static const char bash_perm[] =
    "main.sh: line 1: /usr/nope.txt: Permission denied\n";

/* exit status 1 */
static const char bash_python[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/calc.py\", line 2, in <module>\n"
    "    print(x / 0)\n"
    "          ~~^~~\n"
    "ZeroDivisionError: division by zero\n";

/* exit status 2 */
static const char bash_syntax[] =
    "main.sh: line 2: syntax error near unexpected token `)'\n"
    "main.sh: line 2: `  echo x )'\n";

/* exit status 1 */
static const char node_async[] =
    "/tmp/cap/w/main.js:2\n"
    "  throw new RangeError(\"bad size: -1\");\n"
    "        ^\n"
    "\n"
    "RangeError: bad size: -1\n"
    "    at main (/tmp/cap/w/main.js:2:9)\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:4:1)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n"
    "    at node:internal/main/run_main_module:28:49\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_bare_error[] =
    "/tmp/cap/w/main.js:2\n"
    "  throw new Error();\n"
    "  ^\n"
    "\n"
    "Error\n"
    "    at check (/tmp/cap/w/main.js:2:9)\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:4:1)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n"
    "    at node:internal/main/run_main_module:28:49\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 2 */
static const char node_bare_logged[] =
    "ParseError\n"
    "falling back to defaults\n";

/* exit status 1 */
static const char node_custom[] =
    "/tmp/cap/w/main.js:4\n"
    "throw new ValidationException(\"age must be positive\");\n"
    "^\n"
    "\n"
    "ValidationException: age must be positive\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:4:7)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n"
    "    at node:internal/main/run_main_module:28:49\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_dns[] =
    "/tmp/cap/w/main.js:1\n"
    "require(\"dns\").lookup(\"nonexistent.invalid\", (e) => { if (e) throw e; });\n"
    "                                                             ^\n"
    "\n"
    "Error: getaddrinfo ENOTFOUND nonexistent.invalid\n"
    "    at GetAddrInfoReqWrap.onlookup [as oncomplete] (node:dns:111:26) {\n"
    "  errno: -3008,\n"
    "  code: 'ENOTFOUND',\n"
    "  syscall: 'getaddrinfo',\n"
    "  hostname: 'nonexistent.invalid'\n"
    "}\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_eacces[] =
    "node:fs:2380\n"
    "    return binding.writeFileUtf8(\n"
    "                   ^\n"
    "\n"
    "Error: EACCES: permission denied, open '/usr/out.json'\n"
    "    at Object.writeFileSync (node:fs:2380:20)\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:1:15)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n"
    "    at node:internal/main/run_main_module:28:49 {\n"
    "  errno: -13,\n"
    "  code: 'EACCES',\n"
    "  syscall: 'open',\n"
    "  path: '/usr/out.json'\n"
    "}\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_erofs[] =
    "node:fs:2380\n"
    "    return binding.writeFileUtf8(\n"
    "                   ^\n"
    "\n"
    "Error: EROFS: read-only file system, open '/tmp/cap/ro/o.txt'\n"
    "    at Object.writeFileSync (node:fs:2380:20)\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:1:15)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n"
    "    at node:internal/main/run_main_module:28:49 {\n"
    "  errno: -30,\n"
    "  code: 'EROFS',\n"
    "  syscall: 'open',\n"
    "  path: '/tmp/cap/ro/o.txt'\n"
    "}\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_esm_pkg[] =
    "node:internal/modules/esm/resolve:873\n"
    "  throw new ERR_MODULE_NOT_FOUND(packageName, fileURLToPath(base), null);\n"
    "        ^\n"
    "\n"
    "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'lodash' imported from /tmp/cap/w/main.mjs\n"
    "    at packageResolve (node:internal/modules/esm/resolve:873:9)\n"
    "    at moduleResolve (node:internal/modules/esm/resolve:946:18)\n"
    "    at defaultResolve (node:internal/modules/esm/resolve:1188:11)\n"
    "    at ModuleLoader.defaultResolve (node:internal/modules/esm/loader:708:12)\n"
    "    at #cachedDefaultResolve (node:internal/modules/esm/loader:657:25)\n"
    "    at ModuleLoader.resolve (node:internal/modules/esm/loader:640:38)\n"
    "    at ModuleLoader.getModuleJobForImport (node:internal/modules/esm/loader:264:38)\n"
    "    at ModuleJob._link (node:internal/modules/esm/module_job:168:49) {\n"
    "  code: 'ERR_MODULE_NOT_FOUND'\n"
    "}\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_esm_syntax[] =
    "file:///tmp/cap/w/main.mjs:1\n"
    "const x = ;\n"
    "          ^\n"
    "\n"
    "SyntaxError: Unexpected token ';'\n"
    "    at compileSourceTextModule (node:internal/modules/esm/utils:346:16)\n"
    "    at ModuleLoader.moduleStrategy (node:internal/modules/esm/translators:146:18)\n"
    "    at #translate (node:internal/modules/esm/loader:497:12)\n"
    "    at ModuleLoader.loadAndTranslate (node:internal/modules/esm/loader:544:27)\n"
    "    at async ModuleJob._link (node:internal/modules/esm/module_job:148:19)\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_fetch_netns[] =
    "node:internal/deps/undici/undici:14976\n"
    "      Error.captureStackTrace(err);\n"
    "            ^\n"
    "\n"
    "TypeError: fetch failed\n"
    "    at node:internal/deps/undici/undici:14976:13\n"
    "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5) {\n"
    "  [cause]: Error: getaddrinfo EAI_AGAIN registry.npmjs.org\n"
    "      at GetAddrInfoReqWrap.onlookupall [as oncomplete] (node:dns:122:26) {\n"
    "    errno: -3001,\n"
    "    code: 'EAI_AGAIN',\n"
    "    syscall: 'getaddrinfo',\n"
    "    hostname: 'registry.npmjs.org'\n"
    "  }\n"
    "}\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_logged[] =
    "Error: retrying fetch\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:2:15)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n"
    "    at node:internal/main/run_main_module:28:49\n"
    "/tmp/cap/w/main.js:3\n"
    "console.log(data.map((d) => d.toFixed(1)).join(\",\").foo.bar);\n"
    "                                                       ^\n"
    "\n"
    "TypeError: Cannot read properties of undefined (reading 'bar')\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:3:56)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n"
    "    at node:internal/main/run_main_module:28:49\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_logged_then_throw[] =
    "Error: config missing, using defaults\n"
    "\n"
    "/tmp/cap/w/main.js:2\n"
    "throw \"boom\";\n"
    "^\n"
    "boom\n"
    "(Use `node --trace-uncaught ...` to show where the exception was thrown)\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 134 */
static const char node_oom[] =
    "\n"
    "<--- Last few GCs --->\n"
    "\n"
    "[6315:0x220c4ca0]       27 ms: Mark-Compact 12.1 (20.5) -> 11.7 (20.5) MB, 1.43 / 0.00 ms  (+ 0.3 ms in 5 steps since start of marking, biggest step 0.1 ms, walltime since start of marking 5 ms) (average mu = 1.000, current mu = 1.000) finalize incrementa[6315:0x220c4ca0]       33 ms: Mark-Compact 15.5 (24.3) -> 15.5 (32.3) MB, 3.19 / 0.00 ms  (average mu = 0.484, current mu = 0.484) allocation failure; scavenge might not succeed\n"
    "\n"
    "\n"
    "<--- JS stacktrace --->\n"
    "\n"
    "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n"
    "----- Native stack trace -----\n"
    "\n"
    " 1: 0xb78db3 node::OOMErrorHandler(char const*, v8::OOMDetails const&) [/usr/bin/node]\n"
    " 2: 0xee8300 v8::Utils::ReportOOMFailure(v8::internal::Isolate*, char const*, v8::OOMDetails const&) [/usr/bin/node]\n"
    " 3: 0xee85e7 v8::internal::V8::FatalProcessOutOfMemory(v8::internal::Isolate*, char const*, v8::OOMDetails const&) [/usr/bin/node]\n"
    " 4: 0x10fb205  [/usr/bin/node]\n"
    " 5: 0x1113088 v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace, v8::internal::GarbageCollectionReason, v8::GCCallbackFlags) [/usr/bin/node]\n"
    " 6: 0x10e91f1 v8::internal::HeapAllocator::AllocateRawWithLightRetrySlowPath(int, v8::internal::AllocationType, v8::internal::AllocationOrigin, v8::internal::AllocationAlignment) [/usr/bin/node]\n"
    " 7: 0x10ea385 v8::internal::HeapAllocator::AllocateRawWithRetryOrFailSlowPath(int, v8::internal::AllocationType, v8::internal::AllocationOrigin, v8::internal::AllocationAlignment) [/usr/bin/node]\n"
    " 8: 0x10c69a6 v8::internal::Factory::AllocateRaw(int, v8::internal::AllocationType, v8::internal::AllocationAlignment) [/usr/bin/node]\n"
    " 9: 0x10b7e4a v8::internal::FactoryBase<v8::internal::Factory>::AllocateRawArray(int, v8::internal::AllocationType, v8::internal::AllocationAlignment) [/usr/bin/node]\n"
    "10: 0x10b7fb4 v8::internal::FactoryBase<v8::internal::Factory>::NewFixedArrayWithFiller(v8::internal::Handle<v8::internal::Map>, int, v8::internal::Handle<v8::internal::Oddball>, v8::internal::AllocationType) [/usr/bin/node]\n"
    "11: 0x1297c5f  [/usr/bin/node]\n"
    "12: 0x12a52a3  [/usr/bin/node]\n"
    "13: 0x12c0c2b  [/usr/bin/node]\n"
    "14: 0x12cbb55 v8::internal::ArrayConstructInitializeElements(v8::internal::Handle<v8::internal::JSArray>, v8::internal::Arguments<(v8::internal::ArgumentsType)1>*) [/usr/bin/node]\n"
    "15: 0x1512628 v8::internal::Runtime_NewArray(int, unsigned long*, v8::internal::Isolate*) [/usr/bin/node]\n"
    "16: 0x195e476  [/usr/bin/node]\n";

/* exit status 1 */
static const char node_ref[] =
    "/tmp/cap/w/main.js:2\n"
    "console.log(totl + 1);\n"
    "            ^\n"
    "\n"
    "ReferenceError: totl is not defined\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:2:13)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n"
    "    at node:internal/main/run_main_module:28:49\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_reject[] =
    "node:internal/process/promises:389\n"
    "      new UnhandledPromiseRejection(reason);\n"
    "      ^\n"
    "\n"
    "UnhandledPromiseRejection: This error originated either by throwing inside of an async function without a catch block, or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason \"nope\".\n"
    "    at throwUnhandledRejectionsMode (node:internal/process/promises:389:7)\n"
    "    at processPromiseRejections (node:internal/process/promises:470:17)\n"
    "    at process.processTicksAndRejections (node:internal/process/task_queues:96:32) {\n"
    "  code: 'ERR_UNHANDLED_REJECTION'\n"
    "}\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_relative[] =
    "node:internal/modules/cjs/loader:1210\n"
    "  throw err;\n"
    "  ^\n"
    "\n"
    "Error: Cannot find module './helpers'\n"
    "Require stack:\n"
    "- /tmp/cap/w/main.js\n"
    "    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1038:27)\n"
    "    at Module.require (node:internal/modules/cjs/loader:1289:19)\n"
    "    at require (node:internal/modules/helpers:182:18)\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:1:17)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12) {\n"
    "  code: 'MODULE_NOT_FOUND',\n"
    "  requireStack: [ '/tmp/cap/w/main.js' ]\n"
    "}\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_require[] =
    "node:internal/modules/cjs/loader:1210\n"
    "  throw err;\n"
    "  ^\n"
    "\n"
    "Error: Cannot find module 'lodash'\n"
    "Require stack:\n"
    "- /tmp/cap/w/main.js\n"
    "    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1038:27)\n"
    "    at Module.require (node:internal/modules/cjs/loader:1289:19)\n"
    "    at require (node:internal/modules/helpers:182:18)\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:1:11)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12) {\n"
    "  code: 'MODULE_NOT_FOUND',\n"
    "  requireStack: [ '/tmp/cap/w/main.js' ]\n"
    "}\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_scoped[] =
    "node:internal/modules/cjs/loader:1210\n"
    "  throw err;\n"
    "  ^\n"
    "\n"
    "Error: Cannot find module '@babel/parser/lib'\n"
    "Require stack:\n"
    "- /tmp/cap/w/main.js\n"
    "    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1038:27)\n"
    "    at Module.require (node:internal/modules/cjs/loader:1289:19)\n"
    "    at require (node:internal/modules/helpers:182:18)\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:1:19)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12) {\n"
    "  code: 'MODULE_NOT_FOUND',\n"
    "  requireStack: [ '/tmp/cap/w/main.js' ]\n"
    "}\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
/* node 18 on bad data: a SyntaxError, but of the data, not the code */
static const char node_json_parse[] =
    "<anonymous_script>:1\n"
    "{bad\n"
    " ^\n"
    "\n"
    "SyntaxError: Expected property name or '}' in JSON at position 1\n"
    "    at JSON.parse (<anonymous>)\n"
    "    at Object.<anonymous> (/workspace/main.js:1:6)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "\n"
    "Node.js v18.19.0\n";

static const char node_syntax[] =
    "/tmp/cap/w/main.js:1\n"
    "function add(a, b {\n"
    "                  ^\n"
    "\n"
    "SyntaxError: Unexpected token '{'\n"
    "    at wrapSafe (node:internal/modules/cjs/loader:1464:18)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1495:20)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n"
    "    at node:internal/main/run_main_module:28:49\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_throwobj[] =
    "\n"
    "/tmp/cap/w/main.js:1\n"
    "throw {code: 42};\n"
    "^\n"
    "{ code: 42 }\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_throwstr[] =
    "\n"
    "/tmp/cap/w/main.js:1\n"
    "throw \"boom\";\n"
    "^\n"
    "boom\n"
    "(Use `node --trace-uncaught ...` to show where the exception was thrown)\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_type[] =
    "/tmp/cap/w/main.js:2\n"
    "console.log(o.x);\n"
    "              ^\n"
    "\n"
    "TypeError: Cannot read properties of null (reading 'x')\n"
    "    at Object.<anonymous> (/tmp/cap/w/main.js:2:15)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n"
    "    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n"
    "    at Module.load (node:internal/modules/cjs/loader:1266:32)\n"
    "    at Module._load (node:internal/modules/cjs/loader:1091:12)\n"
    "    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n"
    "    at node:internal/main/run_main_module:28:49\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char node_unreach[] =
    "node:events:502\n"
    "      throw er; // Unhandled 'error' event\n"
    "      ^\n"
    "\n"
    "Error: connect ENETUNREACH 1.1.1.1:80 - Local (0.0.0.0:0)\n"
    "    at internalConnect (node:net:1098:16)\n"
    "    at defaultTriggerAsyncIdScope (node:internal/async_hooks:464:18)\n"
    "    at node:net:1328:9\n"
    "    at process.processTicksAndRejections (node:internal/process/task_queues:77:11)\n"
    "Emitted 'error' event on Socket instance at:\n"
    "    at emitErrorNT (node:internal/streams/destroy:169:8)\n"
    "    at emitErrorCloseNT (node:internal/streams/destroy:128:3)\n"
    "    at process.processTicksAndRejections (node:internal/process/task_queues:82:21) {\n"
    "  errno: -101,\n"
    "  code: 'ENETUNREACH',\n"
    "  syscall: 'connect',\n"
    "  address: '1.1.1.1',\n"
    "  port: 80\n"
    "}\n"
    "\n"
    "Node.js v20.20.2\n";

/* exit status 1 */
static const char py_badutf8[] =
    "\377\376 partial \000 frame\n"
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 4, in <module>\n"
    "    raise ValueError(\"caf\\u00e9 na\\u00efve \\x00 \\u00bd\")\n"
    "ValueError: caf\351 na\357ve \000 \275\n";

/* exit status 1 */
static const char py_bare[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 3, in <module>\n"
    "    raise Boom\n"
    "Boom\n";

/* exit status 1 */
static const char py_chain[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 3, in <module>\n"
    "    json.loads(\"{bad\")\n"
    "  File \"/usr/lib/python3.11/json/__init__.py\", line 346, in loads\n"
    "    return _default_decoder.decode(s)\n"
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3.11/json/decoder.py\", line 337, in decode\n"
    "    obj, end = self.raw_decode(s, idx=_w(s, 0).end())\n"
    "               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3.11/json/decoder.py\", line 353, in raw_decode\n"
    "    obj, end = self.scan_once(s, idx)\n"
    "               ^^^^^^^^^^^^^^^^^^^^^^\n"
    "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)\n"
    "\n"
    "The above exception was the direct cause of the following exception:\n"
    "\n"
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 5, in <module>\n"
    "    raise RuntimeError(\"could not parse config\") from e\n"
    "RuntimeError: could not parse config\n";

/* exit status 1 */
static const char py_chain2[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 2, in <module>\n"
    "    {}[\"k\"]\n"
    "    ~~^^^^^\n"
    "KeyError: 'k'\n"
    "\n"
    "During handling of the above exception, another exception occurred:\n"
    "\n"
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 4, in <module>\n"
    "    undefined_name\n"
    "NameError: name 'undefined_name' is not defined\n";

/* exit status 1 */
static const char py_connref[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 3, in <module>\n"
    "    s.connect((\"127.0.0.1\", 1))\n"
    "ConnectionRefusedError: [Errno 111] Connection refused\n";

/* exit status 1 */
static const char py_custom[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 7, in <module>\n"
    "    withdraw(50)\n"
    "  File \"/tmp/cap/w/main.py\", line 5, in withdraw\n"
    "    raise InsufficientFunds(f\"balance 10 < {n}\")\n"
    "InsufficientFunds: balance 10 < 50\n";

/* exit status 1 */
static const char py_eg[] =
    "  + Exception Group Traceback (most recent call last):\n"
    "  |   File \"/tmp/cap/w/main.py\", line 1, in <module>\n"
    "  |     raise ExceptionGroup(\"batch failed\", [ValueError(\"bad row 3\"), TypeError(\"bad type\")])\n"
    "  | ExceptionGroup: batch failed (2 sub-exceptions)\n"
    "  +-+---------------- 1 ----------------\n"
    "    | ValueError: bad row 3\n"
    "    +---------------- 2 ----------------\n"
    "    | TypeError: bad type\n"
    "    +------------------------------------\n";

/* exit status 1 */
static const char py_erofs[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 1, in <module>\n"
    "    open(\"/tmp/cap/ro/out.csv\", \"w\")\n"
    "OSError: [Errno 30] Read-only file system: '/tmp/cap/ro/out.csv'\n";

/* exit status 1 */
static const char py_exitmsg[] =
    "config file missing\n";

/* exit status 1 */
static const char py_filenotfound[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 2, in <module>\n"
    "    df = pd.read_csv(\"sales.csv\")\n"
    "         ^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3/dist-packages/pandas/util/_decorators.py\", line 211, in wrapper\n"
    "    return func(*args, **kwargs)\n"
    "           ^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3/dist-packages/pandas/util/_decorators.py\", line 331, in wrapper\n"
    "    return func(*args, **kwargs)\n"
    "           ^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3/dist-packages/pandas/io/parsers/readers.py\", line 950, in read_csv\n"
    "    return _read(filepath_or_buffer, kwds)\n"
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3/dist-packages/pandas/io/parsers/readers.py\", line 605, in _read\n"
    "    parser = TextFileReader(filepath_or_buffer, **kwds)\n"
    "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3/dist-packages/pandas/io/parsers/readers.py\", line 1442, in __init__\n"
    "    self._engine = self._make_engine(f, self.engine)\n"
    "                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3/dist-packages/pandas/io/parsers/readers.py\", line 1735, in _make_engine\n"
    "    self.handles = get_handle(\n"
    "                   ^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3/dist-packages/pandas/io/common.py\", line 856, in get_handle\n"
    "    handle = open(\n"
    "             ^^^^^\n"
    "FileNotFoundError: [Errno 2] No such file or directory: 'sales.csv'\n";

/* exit status 1 */
static const char py_ignored[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 7, in <module>\n"
    "    print(prices[5])\n"
    "          ~~~~~~^^^\n"
    "IndexError: list index out of range\n"
    "Exception ignored in: <function Conn.__del__ at 0x7f2268fdf060>\n"
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 3, in __del__\n"
    "RuntimeError: close failed\n";

/* exit status 1 */
static const char py_importname[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 1, in <module>\n"
    "    from os import nosuch\n"
    "ImportError: cannot import name 'nosuch' from 'os' (/usr/lib/python3.11/os.py)\n";

/* exit status 1 */
static const char py_indent[] =
    "  File \"/tmp/cap/w/main.py\", line 3\n"
    "    x = 2\n"
    "IndentationError: unexpected indent\n";

/* exit status 130 */
static const char py_kbint[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 2, in <module>\n"
    "    os.kill(os.getpid(), signal.SIGINT)\n"
    "KeyboardInterrupt\n";

/* exit status 1 */
static const char py_memerr[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 1, in <module>\n"
    "    data = bytearray(10**10)\n"
    "           ^^^^^^^^^^^^^^^^^\n"
    "MemoryError\n";

/* exit status 1 */
static const char py_module[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 2, in <module>\n"
    "    import sklearn\n"
    "ModuleNotFoundError: No module named 'sklearn'\n";

/* exit status 1 */
static const char py_multiline[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 1, in <module>\n"
    "    raise ValueError(\"bad header\\nexpected: id,name\\ngot: id;name\")\n"
    "ValueError: bad header\n"
    "expected: id,name\n"
    "got: id;name\n";

/* exit status 1 */
static const char py_name[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 1, in <module>\n"
    "    print(totl)\n"
    "          ^^^^\n"
    "NameError: name 'totl' is not defined\n";

/* exit status 1 */
static const char py_perm[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 1, in <module>\n"
    "    with open(\"/usr/results.csv\", \"w\") as f:\n"
    "         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "PermissionError: [Errno 13] Permission denied: '/usr/results.csv'\n";

/* exit status 1 */
static const char py_recursion[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 3, in <module>\n"
    "    f(0)\n"
    "  File \"/tmp/cap/w/main.py\", line 2, in f\n"
    "    return f(n + 1)\n"
    "           ^^^^^^^^\n"
    "  File \"/tmp/cap/w/main.py\", line 2, in f\n"
    "    return f(n + 1)\n"
    "           ^^^^^^^^\n"
    "  File \"/tmp/cap/w/main.py\", line 2, in f\n"
    "    return f(n + 1)\n"
    "           ^^^^^^^^\n"
    "  [Previous line repeated 996 more times]\n"
    "RecursionError: maximum recursion depth exceeded\n";

/* exit status 139 */
static const char py_segv[] =
    "Fatal Python error: Segmentation fault\n"
    "\n"
    "Current thread 0x00007f1db985a040 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/ctypes/__init__.py\", line 519 in string_at\n"
    "  File \"/tmp/cap/w/main.py\", line 2 in <module>\n";

/* exit status 1 */
static const char py_submodule[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 1, in <module>\n"
    "    import numpy.fancy\n"
    "ModuleNotFoundError: No module named 'numpy.fancy'\n";

/* exit status 1 */
static const char py_syntax[] =
    "  File \"/tmp/cap/w/main.py\", line 3\n"
    "    print(mean([1, 2, 3])\n"
    "         ^\n"
    "SyntaxError: '(' was never closed\n";

/* exit status 1 */
static const char py_tab[] =
    "  File \"/tmp/cap/w/main.py\", line 3\n"
    "    y = 2\n"
    "TabError: inconsistent use of tabs and spaces in indentation\n";

/* exit status 1 */
static const char py_unreach[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 2, in <module>\n"
    "    socket.create_connection((\"1.1.1.1\", 80))\n"
    "  File \"/usr/lib/python3.11/socket.py\", line 851, in create_connection\n"
    "    raise exceptions[0]\n"
    "  File \"/usr/lib/python3.11/socket.py\", line 836, in create_connection\n"
    "    sock.connect(sa)\n"
    "OSError: [Errno 101] Network is unreachable\n";

/* exit status 1 */
static const char py_urllib_netns[] =
    "Traceback (most recent call last):\n"
    "  File \"/usr/lib/python3.11/urllib/request.py\", line 1348, in do_open\n"
    "    h.request(req.get_method(), req.selector, req.data, headers,\n"
    "  File \"/usr/lib/python3.11/http/client.py\", line 1282, in request\n"
    "    self._send_request(method, url, body, headers, encode_chunked)\n"
    "  File \"/usr/lib/python3.11/http/client.py\", line 1328, in _send_request\n"
    "    self.endheaders(body, encode_chunked=encode_chunked)\n"
    "  File \"/usr/lib/python3.11/http/client.py\", line 1277, in endheaders\n"
    "    self._send_output(message_body, encode_chunked=encode_chunked)\n"
    "  File \"/usr/lib/python3.11/http/client.py\", line 1037, in _send_output\n"
    "    self.send(msg)\n"
    "  File \"/usr/lib/python3.11/http/client.py\", line 975, in send\n"
    "    self.connect()\n"
    "  File \"/usr/lib/python3.11/http/client.py\", line 1447, in connect\n"
    "    super().connect()\n"
    "  File \"/usr/lib/python3.11/http/client.py\", line 941, in connect\n"
    "    self.sock = self._create_connection(\n"
    "                ^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3.11/socket.py\", line 827, in create_connection\n"
    "    for res in getaddrinfo(host, port, 0, SOCK_STREAM):\n"
    "               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3.11/socket.py\", line 962, in getaddrinfo\n"
    "    for res in _socket.getaddrinfo(host, port, family, type, proto, flags):\n"
    "               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "socket.gaierror: [Errno -3] Temporary failure in name resolution\n"
    "\n"
    "During handling of the above exception, another exception occurred:\n"
    "\n"
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 2, in <module>\n"
    "    print(urllib.request.urlopen(\"https://pypi.org/simple/\").status)\n"
    "          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3.11/urllib/request.py\", line 216, in urlopen\n"
    "    return opener.open(url, data, timeout)\n"
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3.11/urllib/request.py\", line 519, in open\n"
    "    response = self._open(req, data)\n"
    "               ^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3.11/urllib/request.py\", line 536, in _open\n"
    "    result = self._call_chain(self.handle_open, protocol, protocol +\n"
    "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3.11/urllib/request.py\", line 496, in _call_chain\n"
    "    result = func(*args)\n"
    "             ^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3.11/urllib/request.py\", line 1391, in https_open\n"
    "    return self.do_open(http.client.HTTPSConnection, req,\n"
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "  File \"/usr/lib/python3.11/urllib/request.py\", line 1351, in do_open\n"
    "    raise URLError(err)\n"
    "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>\n";

/* exit status 1 */
static const char py_warn[] =
    "/tmp/cap/w/main.py:5: DeprecationWarning: invalid escape sequence '\\d'\n"
    "  pat = re.compile(\"\\d+\")\n"
    "/tmp/cap/w/main.py:3: DeprecationWarning: old api\n"
    "  warnings.warn(\"old api\", DeprecationWarning, stacklevel=1)\n"
    "/tmp/cap/w/main.py:4: UserWarning: careful\n"
    "  warnings.warn(\"careful\")\n"
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 6, in <module>\n"
    "    result = int(\"abc\")\n"
    "             ^^^^^^^^^^\n"
    "ValueError: invalid literal for int() with base 10: 'abc'\n";

/* exit status 1 */
static const char py_zde[] =
    "Traceback (most recent call last):\n"
    "  File \"/tmp/cap/w/main.py\", line 3, in <module>\n"
    "    print(total / count)\n"
    "          ~~~~~~^~~~~~~\n"
    "ZeroDivisionError: division by zero\n";

/* ------------------------------------------------------------- helpers --- */

#define TEXT(x) (x), (sizeof(x) - 1)

static const char installed_py[] = "numpy, pandas, scipy, matplotlib, Pillow, PyYAML, sympy";
static const char installed_node[] = "corepack, npm, typescript";

/* Strict UTF-8 check, written apart from the code under test. */
static bool valid_utf8(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned c = *p;
    size_t len;
    unsigned min;
    if (c < 0x80) {
      p++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      min = 0x80;
      c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      min = 0x800;
      c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      min = 0x10000;
      c &= 0x07;
    } else {
      return false;
    }
    for (size_t i = 1; i < len; i++) {
      if ((p[i] & 0xC0) != 0x80)
        return false;
      c = (c << 6) | (p[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
      return false;
    p += len;
  }
  return true;
}

static cr_error_info run(const char *lang, const char *text, size_t len, int exit_code,
                         int signal, const char *installed) {
  cr_classify_input in = {
      .language = lang,
      .err_text = text,
      .err_len = len,
      .exit_code = exit_code,
      .signal = signal,
      .installed = installed,
  };
  cr_error_info e;
  assert_int_equal(cr_classify(&in, &e), 0);
  assert_non_null(e.name);
  assert_non_null(e.message);
  assert_non_null(e.hint);
  assert_true(valid_utf8(e.name));
  assert_true(valid_utf8(e.message));
  assert_true(valid_utf8(e.hint));
  assert_true(strlen(e.name) <= 128);
  assert_true(strlen(e.message) <= 1024);
  assert_true(strlen(e.hint) > 0);
  return e;
}

static void expect(const cr_error_info *e, cr_category cat, const char *name, const char *message,
                   bool retryable) {
  assert_string_equal(cr_category_name(e->category), cr_category_name(cat));
  assert_int_equal(e->category, cat);
  assert_string_equal(e->name, name);
  assert_string_equal(e->message, message);
  assert_int_equal(e->retryable, retryable);
}

static void hint_has(const cr_error_info *e, const char *needle) {
  if (!strstr(e->hint, needle))
    fail_msg("hint \"%s\" does not contain \"%s\"", e->hint, needle);
}

static void hint_lacks(const cr_error_info *e, const char *needle) {
  if (strstr(e->hint, needle))
    fail_msg("hint \"%s\" contains \"%s\"", e->hint, needle);
}

/* -------------------------------------------------------------- python --- */

/* raised deep in pandas, called from the program's line 4 */
static const char py_library_keyerror[] =
    "Traceback (most recent call last):\n"
    "  File \"/usr/lib/python3/dist-packages/pandas/core/indexes/base.py\", line 3802, in get_loc\n"
    "    return self._engine.get_loc(casted_key)\n"
    "KeyError: 'b'\n"
    "\n"
    "The above exception was the direct cause of the following exception:\n"
    "\n"
    "Traceback (most recent call last):\n"
    "  File \"/workspace/main.py\", line 5, in <module>\n"
    "    f(df)\n"
    "  File \"/workspace/main.py\", line 4, in f\n"
    "    return d[\"b\"]\n"
    "  File \"/usr/lib/python3/dist-packages/pandas/core/frame.py\", line 3807, in __getitem__\n"
    "    indexer = self.columns.get_loc(key)\n"
    "  File \"/usr/lib/python3/dist-packages/pandas/core/indexes/base.py\", line 3804, in get_loc\n"
    "    raise KeyError(key) from err\n"
    "KeyError: 'b'\n";

static void test_py_error_in_a_library_names_the_programs_line(void **state) {
  cr_error_info e = run("python", TEXT(py_library_keyerror), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "KeyError", "'b'", true);
  hint_has(&e, "inside a library");
  hint_has(&e, "File \"/workspace/main.py\", line 4");
  cr_error_info_free(&e);
}

static void test_py_module_not_found(void **state) {
  cr_error_info e = run("python", TEXT(py_module), 1, 0, installed_py);
  expect(&e, CR_CAT_MODULE, "ModuleNotFoundError", "No module named 'sklearn'", true);
  hint_has(&e, "'sklearn' is not installed in this sandbox and there is no network to install it");
  hint_has(&e, "use the standard library or one of the installed packages: numpy, pandas, scipy, "
               "matplotlib, Pillow, PyYAML, sympy");
  cr_error_info_free(&e);
}

static void test_py_module_not_found_without_list(void **state) {
  cr_error_info e = run("python", TEXT(py_module), 1, 0, NULL);
  expect(&e, CR_CAT_MODULE, "ModuleNotFoundError", "No module named 'sklearn'", true);
  hint_has(&e, "'sklearn' is not installed");
  hint_has(&e, "standard library");
  hint_lacks(&e, "installed packages");
  cr_error_info_free(&e);

  e = run("python", TEXT(py_module), 1, 0, "  ");
  hint_lacks(&e, "installed packages");
  cr_error_info_free(&e);
}

static void test_py_missing_submodule_of_installed_package(void **state) {
  cr_error_info e = run("python", TEXT(py_submodule), 1, 0, installed_py);
  expect(&e, CR_CAT_MODULE, "ModuleNotFoundError", "No module named 'numpy.fancy'", true);
  hint_has(&e, "'numpy' is installed but has no module 'numpy.fancy'");
  hint_lacks(&e, "not installed");
  cr_error_info_free(&e);
}

static void test_py_syntax_error_in_file(void **state) {
  cr_error_info e = run("python", TEXT(py_syntax), 1, 0, NULL);
  expect(&e, CR_CAT_SYNTAX, "SyntaxError", "'(' was never closed", true);
  hint_has(&e, "File \"/tmp/cap/w/main.py\", line 3");
  hint_has(&e, "caret");
  cr_error_info_free(&e);
}

static void test_py_indentation_and_tab_errors(void **state) {
  cr_error_info e = run("python", TEXT(py_indent), 1, 0, NULL);
  expect(&e, CR_CAT_SYNTAX, "IndentationError", "unexpected indent", true);
  hint_has(&e, "File \"/tmp/cap/w/main.py\", line 3");
  hint_lacks(&e, "caret"); /* Python draws none for this one */
  cr_error_info_free(&e);

  e = run("python", TEXT(py_tab), 1, 0, NULL);
  expect(&e, CR_CAT_SYNTAX, "TabError", "inconsistent use of tabs and spaces in indentation", true);
  hint_has(&e, "line 3");
  cr_error_info_free(&e);
}

static void test_py_zero_division(void **state) {
  cr_error_info e = run("python", TEXT(py_zde), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ZeroDivisionError", "division by zero", true);
  hint_has(&e, "File \"/tmp/cap/w/main.py\", line 3");
  hint_has(&e, "traceback");
  cr_error_info_free(&e);
}

static void test_py_chained_exceptions_use_the_last(void **state) {
  cr_error_info e = run("python", TEXT(py_chain), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "RuntimeError", "could not parse config", true);
  hint_has(&e, "line 5");
  cr_error_info_free(&e);

  e = run("python", TEXT(py_chain2), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "NameError", "name 'undefined_name' is not defined", true);
  hint_has(&e, "Define or import 'undefined_name'");
  cr_error_info_free(&e);
}

static void test_py_name_error(void **state) {
  cr_error_info e = run("python", TEXT(py_name), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "NameError", "name 'totl' is not defined", true);
  hint_has(&e, "Define or import 'totl' before using it");
  cr_error_info_free(&e);
}

static void test_py_network(void **state) {
  cr_error_info e = run("python", TEXT(py_urllib_netns), 1, 0, NULL);
  expect(&e, CR_CAT_NETWORK, "urllib.error.URLError",
         "<urlopen error [Errno -3] Temporary failure in name resolution>", false);
  hint_has(&e, "no network access");
  hint_has(&e, "/workspace");
  cr_error_info_free(&e);

  e = run("python", TEXT(py_unreach), 1, 0, NULL);
  expect(&e, CR_CAT_NETWORK, "OSError", "[Errno 101] Network is unreachable", false);
  cr_error_info_free(&e);

  e = run("python", TEXT(py_connref), 1, 0, NULL);
  expect(&e, CR_CAT_NETWORK, "ConnectionRefusedError", "[Errno 111] Connection refused", false);
  cr_error_info_free(&e);
}

static void test_py_permission(void **state) {
  cr_error_info e = run("python", TEXT(py_perm), 1, 0, NULL);
  expect(&e, CR_CAT_PERMISSION, "PermissionError",
         "[Errno 13] Permission denied: '/usr/results.csv'", false);
  hint_has(&e, "/workspace");
  hint_has(&e, "/tmp");
  cr_error_info_free(&e);

  e = run("python", TEXT(py_erofs), 1, 0, NULL);
  expect(&e, CR_CAT_PERMISSION, "OSError",
         "[Errno 30] Read-only file system: '/tmp/cap/ro/out.csv'", false);
  hint_has(&e, "/workspace");
  cr_error_info_free(&e);
}

/* Synthetic: an EPERM raised from socket code is the network wall, not a
 * file permission; the frames say which. */
static void test_py_eperm_in_socket_is_network(void **state) {
  static const char text[] =
      "Traceback (most recent call last):\n"
      "  File \"/workspace/main.py\", line 2, in <module>\n"
      "    s = socket.create_connection((\"example.com\", 80))\n"
      "  File \"/usr/lib/python3.11/socket.py\", line 851, in create_connection\n"
      "    raise exceptions[0]\n"
      "PermissionError: [Errno 1] Operation not permitted\n";
  cr_error_info e = run("python", TEXT(text), 1, 0, NULL);
  expect(&e, CR_CAT_NETWORK, "PermissionError", "[Errno 1] Operation not permitted", false);
  cr_error_info_free(&e);
}

static void test_py_memory_error(void **state) {
  cr_error_info e = run("python", TEXT(py_memerr), 1, 0, NULL);
  expect(&e, CR_CAT_MEMORY, "MemoryError", "", false);
  hint_has(&e, "memory");
  cr_error_info_free(&e);
}

static void test_py_keyboard_interrupt_with_sigint(void **state) {
  /* Python re-raises SIGINT after printing, so the exit is by signal 2. */
  cr_error_info e = run("python", TEXT(py_kbint), 0, 2, NULL);
  expect(&e, CR_CAT_RUNTIME, "KeyboardInterrupt", "", false);
  hint_has(&e, "interrupted");
  cr_error_info_free(&e);
}

static void test_py_exception_group(void **state) {
  cr_error_info e = run("python", TEXT(py_eg), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ExceptionGroup", "batch failed (2 sub-exceptions)", true);
  cr_error_info_free(&e);
}

static void test_py_warnings_do_not_confuse(void **state) {
  cr_error_info e = run("python", TEXT(py_warn), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ValueError", "invalid literal for int() with base 10: 'abc'", true);
  hint_has(&e, "line 6");
  cr_error_info_free(&e);
}

static void test_py_custom_and_bare_exceptions(void **state) {
  cr_error_info e = run("python", TEXT(py_custom), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "InsufficientFunds", "balance 10 < 50", true);
  hint_has(&e, "line 5");
  cr_error_info_free(&e);

  e = run("python", TEXT(py_bare), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "Boom", "", true);
  cr_error_info_free(&e);
}

static void test_py_exception_ignored_at_exit_is_not_the_cause(void **state) {
  cr_error_info e = run("python", TEXT(py_ignored), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "IndexError", "list index out of range", true);
  cr_error_info_free(&e);
}

static void test_py_multiline_message_cut_at_first_line(void **state) {
  cr_error_info e = run("python", TEXT(py_multiline), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ValueError", "bad header", true);
  cr_error_info_free(&e);
}

static void test_py_invalid_utf8_and_nul(void **state) {
  cr_error_info e = run("python", TEXT(py_badutf8), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ValueError",
         "caf\xEF\xBF\xBD na\xEF\xBF\xBDve \xEF\xBF\xBD \xEF\xBF\xBD", true);
  cr_error_info_free(&e);
}

static void test_py_import_error_other(void **state) {
  cr_error_info e = run("python", TEXT(py_importname), 1, 0, installed_py);
  expect(&e, CR_CAT_RUNTIME, "ImportError",
         "cannot import name 'nosuch' from 'os' (/usr/lib/python3.11/os.py)", true);
  hint_lacks(&e, "not installed");
  cr_error_info_free(&e);
}

static void test_py_file_not_found_and_recursion(void **state) {
  cr_error_info e = run("python", TEXT(py_filenotfound), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "FileNotFoundError",
         "[Errno 2] No such file or directory: 'sales.csv'", true);
  hint_has(&e, "/workspace");
  cr_error_info_free(&e);

  e = run("python", TEXT(py_recursion), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "RecursionError", "maximum recursion depth exceeded", true);
  hint_has(&e, "iterative");
  cr_error_info_free(&e);
}

static void test_py_sys_exit_message_falls_back(void **state) {
  cr_error_info e = run("python", TEXT(py_exitmsg), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ExitStatus", "exited with code 1", true);
  hint_has(&e, "last line of stderr: \"config file missing\"");
  cr_error_info_free(&e);
}

static void test_py_segfault_is_a_signal(void **state) {
  cr_error_info e = run("python", TEXT(py_segv), 0, 11, NULL);
  expect(&e, CR_CAT_RUNTIME, "Signal", "killed by signal SIGSEGV (11)", true);
  hint_has(&e, "native code");
  cr_error_info_free(&e);
}

/* Windows line endings and a tail that starts in the middle of a character
 * and of a traceback still classify. */
static void test_py_crlf_and_cut_tail(void **state) {
  static const char crlf[] = "Traceback (most recent call last):\r\n"
                             "  File \"/workspace/main.py\", line 3, in <module>\r\n"
                             "    print(total / count)\r\n"
                             "ZeroDivisionError: division by zero\r\n";
  cr_error_info e = run("python", TEXT(crlf), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ZeroDivisionError", "division by zero", true);
  hint_has(&e, "File \"/workspace/main.py\", line 3");
  cr_error_info_free(&e);

  static const char cut[] = "\xA9\xC3 /tmp/cap/w/main.py\", line 5, in <module>\n"
                            "    raise RuntimeError(\"could not parse config\") from e\n"
                            "RuntimeError: could not parse config\n";
  e = run("python", TEXT(cut), 1, 0, NULL);
  /* No traceback header survived: nothing to trust, so the exit status. */
  expect(&e, CR_CAT_RUNTIME, "ExitStatus", "exited with code 1", true);
  hint_has(&e, "RuntimeError: could not parse config");
  cr_error_info_free(&e);

  size_t off = sizeof py_chain - 1 - 200;
  e = run("python", py_chain + off, 200, 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "RuntimeError", "could not parse config", true);
  cr_error_info_free(&e);
}

/* ---------------------------------------------------------------- node --- */

static void test_node_require_missing(void **state) {
  cr_error_info e = run("node", TEXT(node_require), 1, 0, installed_node);
  expect(&e, CR_CAT_MODULE, "Error", "Cannot find module 'lodash'", true);
  hint_has(&e, "'lodash' is not installed in this sandbox and there is no network to install it");
  hint_has(&e, "installed packages: corepack, npm, typescript");
  cr_error_info_free(&e);
}

static void test_node_esm_package_missing(void **state) {
  cr_error_info e = run("node", TEXT(node_esm_pkg), 1, 0, NULL);
  expect(&e, CR_CAT_MODULE, "Error [ERR_MODULE_NOT_FOUND]",
         "Cannot find package 'lodash' imported from /tmp/cap/w/main.mjs", true);
  hint_has(&e, "'lodash' is not installed");
  hint_lacks(&e, "installed packages");
  cr_error_info_free(&e);
}

static void test_node_scoped_and_relative_modules(void **state) {
  cr_error_info e = run("node", TEXT(node_scoped), 1, 0, NULL);
  expect(&e, CR_CAT_MODULE, "Error", "Cannot find module '@babel/parser/lib'", true);
  hint_has(&e, "'@babel/parser' is not installed");
  cr_error_info_free(&e);

  e = run("node", TEXT(node_relative), 1, 0, installed_node);
  expect(&e, CR_CAT_MODULE, "Error", "Cannot find module './helpers'", true);
  hint_has(&e, "The file './helpers' does not exist");
  hint_lacks(&e, "not installed");
  cr_error_info_free(&e);
}

static void test_node_syntax_error(void **state) {
  cr_error_info e = run("node", TEXT(node_syntax), 1, 0, NULL);
  expect(&e, CR_CAT_SYNTAX, "SyntaxError", "Unexpected token '{'", true);
  hint_has(&e, "/tmp/cap/w/main.js:1");
  cr_error_info_free(&e);

  e = run("node", TEXT(node_esm_syntax), 1, 0, NULL);
  expect(&e, CR_CAT_SYNTAX, "SyntaxError", "Unexpected token ';'", true);
  hint_has(&e, "file:///tmp/cap/w/main.mjs:1");
  cr_error_info_free(&e);
}

static void test_node_json_parse_is_about_the_data(void **state) {
  cr_error_info e = run("node", TEXT(node_json_parse), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "SyntaxError", "Expected property name or '}' in JSON at position 1",
         true);
  hint_has(&e, "not valid JSON");
  cr_error_info_free(&e);
}

static void test_node_reference_and_type_errors(void **state) {
  cr_error_info e = run("node", TEXT(node_ref), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ReferenceError", "totl is not defined", true);
  hint_has(&e, "Define or import 'totl'");
  cr_error_info_free(&e);

  e = run("node", TEXT(node_type), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "TypeError", "Cannot read properties of null (reading 'x')", true);
  hint_has(&e, "/tmp/cap/w/main.js:2");
  cr_error_info_free(&e);
}

static void test_node_other_error_classes(void **state) {
  cr_error_info e = run("node", TEXT(node_async), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "RangeError", "bad size: -1", true);
  cr_error_info_free(&e);

  e = run("node", TEXT(node_custom), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ValidationException", "age must be positive", true);
  cr_error_info_free(&e);

  e = run("node", TEXT(node_reject), 1, 0, NULL);
  assert_int_equal(e.category, CR_CAT_RUNTIME);
  assert_string_equal(e.name, "UnhandledPromiseRejection");
  assert_non_null(strstr(e.message, "rejected with the reason \"nope\""));
  hint_has(&e, ".catch()");
  cr_error_info_free(&e);
}

static void test_node_logged_error_is_not_the_cause(void **state) {
  cr_error_info e = run("node", TEXT(node_logged), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "TypeError", "Cannot read properties of undefined (reading 'bar')",
         true);
  hint_has(&e, "/tmp/cap/w/main.js:3");
  cr_error_info_free(&e);
}

static void test_node_thrown_values(void **state) {
  cr_error_info e = run("node", TEXT(node_throwstr), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "Uncaught", "boom", true);
  hint_has(&e, "/tmp/cap/w/main.js:1");
  cr_error_info_free(&e);

  e = run("node", TEXT(node_throwobj), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "Uncaught", "{ code: 42 }", true);
  cr_error_info_free(&e);

  static const char repl[] = "Uncaught 'x'\n";
  e = run("node", TEXT(repl), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "Uncaught", "'x'", true);
  cr_error_info_free(&e);
}

/* An error line the program logged, with no stack under it, is not the
 * uncaught throw printed after it. */
static void test_node_logged_line_then_thrown_value(void **state) {
  cr_error_info e = run("node", TEXT(node_logged_then_throw), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "Uncaught", "boom", true);
  hint_has(&e, "/tmp/cap/w/main.js:2");
  cr_error_info_free(&e);
}

/* A bare class name counts only with a stack under it. */
static void test_node_bare_names(void **state) {
  cr_error_info e = run("node", TEXT(node_bare_error), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "Error", "", true);
  hint_has(&e, "/tmp/cap/w/main.js:2");
  cr_error_info_free(&e);

  e = run("node", TEXT(node_bare_logged), 2, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ExitStatus", "exited with code 2", true);
  hint_has(&e, "last line of stderr: \"falling back to defaults\"");
  cr_error_info_free(&e);
}

static void test_node_network(void **state) {
  cr_error_info e = run("node", TEXT(node_dns), 1, 0, NULL);
  expect(&e, CR_CAT_NETWORK, "Error", "getaddrinfo ENOTFOUND nonexistent.invalid", false);
  hint_has(&e, "no network access");
  cr_error_info_free(&e);

  /* fetch() hides the real cause in [cause]. */
  e = run("node", TEXT(node_fetch_netns), 1, 0, NULL);
  expect(&e, CR_CAT_NETWORK, "TypeError", "fetch failed", false);
  cr_error_info_free(&e);

  e = run("node", TEXT(node_unreach), 1, 0, NULL);
  expect(&e, CR_CAT_NETWORK, "Error", "connect ENETUNREACH 1.1.1.1:80 - Local (0.0.0.0:0)", false);
  cr_error_info_free(&e);
}

static void test_node_permission(void **state) {
  cr_error_info e = run("node", TEXT(node_eacces), 1, 0, NULL);
  expect(&e, CR_CAT_PERMISSION, "Error", "EACCES: permission denied, open '/usr/out.json'", false);
  hint_has(&e, "/workspace");
  cr_error_info_free(&e);

  e = run("node", TEXT(node_erofs), 1, 0, NULL);
  expect(&e, CR_CAT_PERMISSION, "Error",
         "EROFS: read-only file system, open '/tmp/cap/ro/o.txt'", false);
  cr_error_info_free(&e);
}

static void test_node_heap_out_of_memory(void **state) {
  /* V8 aborts: the exit is by SIGABRT, yet the text says more. */
  cr_error_info e = run("node", TEXT(node_oom), 0, 6, NULL);
  expect(&e, CR_CAT_MEMORY, "HeapOutOfMemory",
         "Reached heap limit Allocation failed - JavaScript heap out of memory", false);
  cr_error_info_free(&e);
}

/* ---------------------------------------------------------------- bash --- */

static void test_bash_command_not_found(void **state) {
  cr_error_info e = run("bash", TEXT(bash_cnf), 127, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "CommandNotFound", "foo_tool: command not found", true);
  hint_has(&e, "'foo_tool'");
  cr_error_info_free(&e);
}

static void test_bash_syntax_errors(void **state) {
  cr_error_info e = run("bash", TEXT(bash_syntax), 2, 0, NULL);
  expect(&e, CR_CAT_SYNTAX, "SyntaxError", "syntax error near unexpected token `)'", true);
  hint_has(&e, "main.sh: line 2");
  cr_error_info_free(&e);

  e = run("bash", TEXT(bash_eof), 2, 0, NULL);
  expect(&e, CR_CAT_SYNTAX, "SyntaxError", "syntax error: unexpected end of file", true);
  hint_has(&e, "main.sh: line 3");
  cr_error_info_free(&e);
}

static void test_bash_permission_and_network(void **state) {
  cr_error_info e = run("bash", TEXT(bash_perm), 1, 0, NULL);
  expect(&e, CR_CAT_PERMISSION, "PermissionDenied", "/usr/nope.txt: Permission denied", false);
  hint_has(&e, "/workspace");
  cr_error_info_free(&e);

  e = run("bash", TEXT(bash_erofs), 1, 0, NULL);
  expect(&e, CR_CAT_PERMISSION, "ReadOnlyFileSystem", "/tmp/cap/ro/o.txt: Read-only file system",
         false);
  cr_error_info_free(&e);

  e = run("bash", TEXT(bash_curl), 6, 0, NULL);
  expect(&e, CR_CAT_NETWORK, "NetworkError", "curl: (6) Could not resolve host: example.com",
         false);
  cr_error_info_free(&e);

  e = run("bash", TEXT(bash_nofile), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "FileNotFound", "cat: data.csv: No such file or directory", true);
  cr_error_info_free(&e);
}

static void test_bash_running_python(void **state) {
  cr_error_info e = run("bash", TEXT(bash_python), 1, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ZeroDivisionError", "division by zero", true);
  hint_has(&e, "calc.py\", line 2");
  cr_error_info_free(&e);
}

static void test_bash_nul_and_invalid_bytes_in_hint(void **state) {
  cr_error_info e = run("bash", TEXT(bash_nul), 4, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ExitStatus", "exited with code 4", true);
  hint_has(&e, "last line of stderr: \"partial\xEF\xBF\xBDline \xEF\xBF\xBD\"");
  cr_error_info_free(&e);
}

/* ------------------------------------------------------------ fallback --- */

static void test_empty_stderr_exit_code(void **state) {
  cr_error_info e = run("bash", TEXT(bash_empty), 3, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ExitStatus", "exited with code 3", true);
  hint_has(&e, "code 3");
  hint_lacks(&e, "last line");
  cr_error_info_free(&e);

  e = run("python", NULL, 0, 3, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ExitStatus", "exited with code 3", true);
  cr_error_info_free(&e);
}

static void test_signals(void **state) {
  cr_error_info e = run("node", "", 0, 0, 11, NULL);
  expect(&e, CR_CAT_RUNTIME, "Signal", "killed by signal SIGSEGV (11)", true);
  cr_error_info_free(&e);

  e = run("python", "", 0, 0, 9, NULL);
  expect(&e, CR_CAT_RUNTIME, "Signal", "killed by signal SIGKILL (9)", true);
  cr_error_info_free(&e);

  /* The seccomp filter kills with SIGSYS: a wall of the sandbox. */
  e = run("python", "", 0, 0, 31, NULL);
  expect(&e, CR_CAT_PERMISSION, "Signal", "killed by signal SIGSYS (31)", false);
  cr_error_info_free(&e);

  e = run("bash", "", 0, 0, 24, NULL);
  expect(&e, CR_CAT_TIMEOUT, "Signal", "killed by signal SIGXCPU (24)", true);
  cr_error_info_free(&e);

  /* A traceback printed before a crash is not what killed the program. */
  e = run("python", TEXT(py_zde), 0, 6, NULL);
  expect(&e, CR_CAT_RUNTIME, "Signal", "killed by signal SIGABRT (6)", true);
  cr_error_info_free(&e);

  e = run("bash", "", 0, 137, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ExitStatus", "exited with code 137", true);
  hint_has(&e, "SIGKILL");
  cr_error_info_free(&e);
}

static void test_long_last_line_not_quoted(void **state) {
  char text[400];
  memset(text, 'x', sizeof text - 1);
  text[sizeof text - 1] = '\0';
  cr_error_info e = run("python", text, sizeof text - 1, 2, 0, NULL);
  expect(&e, CR_CAT_RUNTIME, "ExitStatus", "exited with code 2", true);
  hint_lacks(&e, "last line");
  cr_error_info_free(&e);
}

static void test_caps_cut_on_character_boundary(void **state) {
  /* "LongError: x" + 1000 two-byte characters, with a 300-byte name. */
  size_t len = 300 + strlen(": x") + 2000 + 1;
  char *text = malloc(len + 1);
  assert_non_null(text);
  memset(text, 'A', 295);
  memcpy(text + 295, "Error: x", 8);
  size_t o = 303;
  for (int i = 0; i < 1000; i++) {
    text[o++] = '\xC3';
    text[o++] = '\xA9';
  }
  text[o++] = '\n';
  text[o] = '\0';
  static const char head[] = "Traceback (most recent call last):\n  File \"m.py\", line 1\n";
  size_t total = sizeof head - 1 + o;
  char *all = malloc(total + 1);
  assert_non_null(all);
  memcpy(all, head, sizeof head - 1);
  memcpy(all + sizeof head - 1, text, o + 1);
  free(text);

  cr_error_info e = run("python", all, total, 1, 0, NULL);
  assert_int_equal(e.category, CR_CAT_RUNTIME);
  assert_int_equal(strlen(e.name), 128);
  assert_memory_equal(e.name, "AAAA", 4);
  /* "x" then 511 whole characters: the 512th would not fit in 1024. */
  assert_int_equal(strlen(e.message), 1023);
  assert_int_equal((unsigned char)e.message[1021], 0xC3);
  assert_int_equal((unsigned char)e.message[1022], 0xA9);
  cr_error_info_free(&e);
  free(all);
}

static void test_invalid_installed_list_is_cleaned(void **state) {
  cr_error_info e = run("python", TEXT(py_module), 1, 0, "numpy, caf\xE9, \xFF");
  hint_has(&e, "numpy, caf\xEF\xBF\xBD, \xEF\xBF\xBD");
  cr_error_info_free(&e);
}

/* -------------------------------------------------------------- limits --- */

static void test_error_for_limit(void **state) {
  cr_error_info e;
  assert_int_equal(cr_error_for_limit(CR_CAT_TIMEOUT, "wall-clock limit of 2 s exceeded", &e), 0);
  expect(&e, CR_CAT_TIMEOUT, "TimeLimitExceeded", "wall-clock limit of 2 s exceeded", true);
  hint_has(&e, "time limit");
  hint_has(&e, "stdin is empty");
  cr_error_info_free(&e);

  assert_int_equal(cr_error_for_limit(CR_CAT_MEMORY, "memory limit of 256 MiB exceeded", &e), 0);
  expect(&e, CR_CAT_MEMORY, "MemoryLimitExceeded", "memory limit of 256 MiB exceeded", false);
  hint_has(&e, "chunks");
  hint_has(&e, "higher limit");
  cr_error_info_free(&e);

  assert_int_equal(cr_error_for_limit(CR_CAT_OUTPUT, "stdout exceeded 1 MiB", &e), 0);
  expect(&e, CR_CAT_OUTPUT, "OutputLimitExceeded", "stdout exceeded 1 MiB", true);
  hint_has(&e, "print less");
  cr_error_info_free(&e);

  assert_int_equal(cr_error_for_limit(CR_CAT_SANDBOX, NULL, &e), 0);
  assert_int_equal(e.category, CR_CAT_SANDBOX);
  assert_string_equal(e.name, "SandboxError");
  assert_false(e.retryable);
  assert_true(strlen(e.message) > 0);
  hint_has(&e, "not a problem in the code");
  cr_error_info_free(&e);

  assert_int_equal(cr_error_for_limit(CR_CAT_SANDBOX, "clone3: \xFF", &e), 0);
  assert_string_equal(e.message, "clone3: \xEF\xBF\xBD");
  cr_error_info_free(&e);

  errno = 0;
  assert_int_equal(cr_error_for_limit(CR_CAT_SYNTAX, "x", &e), -1);
  assert_int_equal(errno, EINVAL);
  assert_null(e.name);
  cr_error_info_free(&e);
}

static void test_category_names(void **state) {
  assert_string_equal(cr_category_name(CR_CAT_NONE), "none");
  assert_string_equal(cr_category_name(CR_CAT_SYNTAX), "syntax_error");
  assert_string_equal(cr_category_name(CR_CAT_RUNTIME), "runtime_error");
  assert_string_equal(cr_category_name(CR_CAT_MODULE), "module_not_found");
  assert_string_equal(cr_category_name(CR_CAT_TIMEOUT), "timeout");
  assert_string_equal(cr_category_name(CR_CAT_MEMORY), "memory_limit");
  assert_string_equal(cr_category_name(CR_CAT_OUTPUT), "output_limit");
  assert_string_equal(cr_category_name(CR_CAT_PERMISSION), "permission_denied");
  assert_string_equal(cr_category_name(CR_CAT_NETWORK), "network_blocked");
  assert_string_equal(cr_category_name(CR_CAT_SANDBOX), "sandbox_error");
  assert_string_equal(cr_category_name((cr_category)99), "none");
}

static void test_free_is_safe_twice(void **state) {
  cr_error_info e;
  memset(&e, 0, sizeof e);
  cr_error_info_free(&e);
  cr_error_info_free(NULL);
  e = run("bash", "", 0, 1, 0, NULL);
  cr_error_info_free(&e);
  cr_error_info_free(&e);
  assert_null(e.hint);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_py_module_not_found),
      cmocka_unit_test(test_py_module_not_found_without_list),
      cmocka_unit_test(test_py_missing_submodule_of_installed_package),
      cmocka_unit_test(test_py_syntax_error_in_file),
      cmocka_unit_test(test_py_indentation_and_tab_errors),
      cmocka_unit_test(test_py_zero_division),
      cmocka_unit_test(test_py_chained_exceptions_use_the_last),
      cmocka_unit_test(test_py_name_error),
      cmocka_unit_test(test_py_network),
      cmocka_unit_test(test_py_permission),
      cmocka_unit_test(test_py_eperm_in_socket_is_network),
      cmocka_unit_test(test_py_memory_error),
      cmocka_unit_test(test_py_keyboard_interrupt_with_sigint),
      cmocka_unit_test(test_py_exception_group),
      cmocka_unit_test(test_py_warnings_do_not_confuse),
      cmocka_unit_test(test_py_custom_and_bare_exceptions),
      cmocka_unit_test(test_py_exception_ignored_at_exit_is_not_the_cause),
      cmocka_unit_test(test_py_multiline_message_cut_at_first_line),
      cmocka_unit_test(test_py_invalid_utf8_and_nul),
      cmocka_unit_test(test_py_import_error_other),
      cmocka_unit_test(test_py_file_not_found_and_recursion),
      cmocka_unit_test(test_py_sys_exit_message_falls_back),
      cmocka_unit_test(test_py_segfault_is_a_signal),
      cmocka_unit_test(test_py_crlf_and_cut_tail),
      cmocka_unit_test(test_node_require_missing),
      cmocka_unit_test(test_node_esm_package_missing),
      cmocka_unit_test(test_node_scoped_and_relative_modules),
      cmocka_unit_test(test_node_syntax_error),
      cmocka_unit_test(test_py_error_in_a_library_names_the_programs_line),
      cmocka_unit_test(test_node_json_parse_is_about_the_data),
      cmocka_unit_test(test_node_reference_and_type_errors),
      cmocka_unit_test(test_node_other_error_classes),
      cmocka_unit_test(test_node_logged_error_is_not_the_cause),
      cmocka_unit_test(test_node_thrown_values),
      cmocka_unit_test(test_node_logged_line_then_thrown_value),
      cmocka_unit_test(test_node_bare_names),
      cmocka_unit_test(test_node_network),
      cmocka_unit_test(test_node_permission),
      cmocka_unit_test(test_node_heap_out_of_memory),
      cmocka_unit_test(test_bash_command_not_found),
      cmocka_unit_test(test_bash_syntax_errors),
      cmocka_unit_test(test_bash_permission_and_network),
      cmocka_unit_test(test_bash_running_python),
      cmocka_unit_test(test_bash_nul_and_invalid_bytes_in_hint),
      cmocka_unit_test(test_empty_stderr_exit_code),
      cmocka_unit_test(test_signals),
      cmocka_unit_test(test_long_last_line_not_quoted),
      cmocka_unit_test(test_caps_cut_on_character_boundary),
      cmocka_unit_test(test_invalid_installed_list_is_cleaned),
      cmocka_unit_test(test_error_for_limit),
      cmocka_unit_test(test_category_names),
      cmocka_unit_test(test_free_is_safe_twice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
