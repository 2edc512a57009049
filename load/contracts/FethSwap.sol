// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.28;

/// A swap-like pool for feth's `swap` write kind: constant-product swaps
/// between two internal assets with a 0.3 % fee, as a Uniswap V2 pair
/// prices them. Each call reads and writes both reserves and the trader's
/// two balances and emits `Swap`; a trader's first call grants it both
/// assets (so the load needs no hand-outs).
contract FethSwap {
    /// Each trader's grant of both assets on its first swap.
    uint256 public constant GRANT = 1e24;

    uint256 public reserve0;
    uint256 public reserve1;
    mapping(address => uint256) public balance0;
    mapping(address => uint256) public balance1;
    mapping(address => bool) public joined;

    event Swap(address indexed trader, bool zeroForOne, uint256 amountIn, uint256 amountOut);

    constructor() {
        reserve0 = 1e30;
        reserve1 = 1e30;
    }

    /// Swaps `amountIn` of asset 0 for asset 1 (or the other way), refusing
    /// less than `minOut` out.
    function swap(bool zeroForOne, uint256 amountIn, uint256 minOut) external returns (uint256 out) {
        if (!joined[msg.sender]) {
            joined[msg.sender] = true;
            balance0[msg.sender] = GRANT;
            balance1[msg.sender] = GRANT;
        }
        (uint256 rIn, uint256 rOut) = zeroForOne ? (reserve0, reserve1) : (reserve1, reserve0);
        uint256 inWithFee = amountIn * 997;
        out = (inWithFee * rOut) / (rIn * 1000 + inWithFee);
        require(out > 0 && out >= minOut, "slippage");
        if (zeroForOne) {
            balance0[msg.sender] -= amountIn;
            balance1[msg.sender] += out;
            reserve0 = rIn + amountIn;
            reserve1 = rOut - out;
        } else {
            balance1[msg.sender] -= amountIn;
            balance0[msg.sender] += out;
            reserve1 = rIn + amountIn;
            reserve0 = rOut - out;
        }
        emit Swap(msg.sender, zeroForOne, amountIn, out);
    }
}
