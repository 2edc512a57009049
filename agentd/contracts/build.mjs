// Compiles FethToken.sol with solc-js into FethToken.bin (creation code, hex).
// Usage: npm install solc@0.8.28 && node build.mjs   (run in this folder)
import fs from "node:fs";
import solc from "solc";

const input = {
  language: "Solidity",
  sources: { "FethToken.sol": { content: fs.readFileSync("FethToken.sol", "utf8") } },
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
const bin = out.contracts["FethToken.sol"].FethToken.evm.bytecode.object;
fs.writeFileSync("FethToken.bin", bin + "\n");
console.log(`FethToken.bin: ${bin.length / 2} bytes (solc ${solc.version()})`);
