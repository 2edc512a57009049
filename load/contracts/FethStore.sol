// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.28;

/// Storage-heavy writes for feth's `store` write kind, and a view that does
/// real work for its `digest` read.
contract FethStore {
    /// Cells of each writer, by index.
    mapping(address => mapping(uint256 => uint256)) public cells;
    /// The last value each writer stored: every write chains from it.
    mapping(address => uint256) public last;

    event Stored(address indexed writer, uint256 indexed first, uint256 count, uint256 last);

    /// Writes the caller's cells `first` .. `first + count` (at most 64),
    /// each the hash of the one before, and emits `Stored`.
    function store(uint256 first, uint256 count) external {
        require(count <= 64, "count");
        uint256 acc = last[msg.sender];
        for (uint256 i = 0; i < count; i++) {
            acc = uint256(keccak256(abi.encode(acc, first + i)));
            cells[msg.sender][first + i] = acc;
        }
        last[msg.sender] = acc;
        emit Stored(msg.sender, first, count, acc);
    }

    /// `rounds` Keccak-256 rounds from `seed`: h = keccak256(h ‖ i) for
    /// i = 0 .. rounds. Costs about 250 gas a round, and anyone can check
    /// the answer.
    function digest(bytes32 seed, uint256 rounds) external pure returns (bytes32 h) {
        h = seed;
        for (uint256 i = 0; i < rounds; i++) {
            h = keccak256(abi.encodePacked(h, i));
        }
    }
}
