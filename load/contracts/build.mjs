// Compiles every contract here with solc-js into <Name>.bin (creation code,
// hex): FethToken (the erc20 workload), FethStore (the store workload and the
// digest read), FethSwap (the swap workload) and FethDisperse (feth fund's
// batches).
// Usage: npm install solc@0.8.28 && node build.mjs   (run in this folder)
import fs from "node:fs";
import solc from "solc";

const sources = {};
for (const file of fs.readdirSync(".").filter((f) => f.endsWith(".sol")).sort()) {
  sources[file] = { content: fs.readFileSync(file, "utf8") };
}
const input = {
  language: "Solidity",
  sources,
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: "cancun",
    outputSelection: { "*": { "*": ["evm.bytecode.object"] } },
  },
};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
for (const e of out.errors ?? []) {
  console.error(e.formattedMessage);
  if (e.severity === "error") process.exit(1);
}
for (const [file, contracts] of Object.entries(out.contracts)) {
  for (const [name, contract] of Object.entries(contracts)) {
    const bin = contract.evm.bytecode.object;
    fs.writeFileSync(`${name}.bin`, bin + "\n");
    console.log(`${name}.bin (${file}): ${bin.length / 2} bytes (solc ${solc.version()})`);
  }
}
