// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.28;

/// Pays many accounts in one transaction: `feth fund`'s batch path. Either
/// every recipient is paid exactly its value or the whole call reverts, and
/// the ether sent must equal the sum of the values, so a batch can never pay
/// anyone twice nor keep anything.
contract FethDisperse {
    error LengthMismatch(uint256 recipients, uint256 values);
    error ValueMismatch(uint256 sent, uint256 owed);
    error PaymentFailed(address recipient);

    function disperseEther(address[] calldata recipients, uint256[] calldata values)
        external
        payable
    {
        if (recipients.length != values.length) {
            revert LengthMismatch(recipients.length, values.length);
        }
        uint256 total;
        for (uint256 i; i < recipients.length; ++i) {
            total += values[i];
            (bool ok,) = recipients[i].call{value: values[i]}("");
            if (!ok) revert PaymentFailed(recipients[i]);
        }
        if (total != msg.value) revert ValueMismatch(msg.value, total);
    }
}
