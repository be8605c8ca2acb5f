-- kernel-lsp user commands and autocommands (lua/kernel_lsp/commands.lua).
-- The server itself is configured by lsp/kernel_lsp.lua; enable it with
-- `vim.lsp.enable('kernel_lsp')` or `require('kernel_lsp').setup()`.
--
-- This file is only sourced when editors/nvim is on the runtimepath at
-- startup. The same commands are also defined by `require('kernel_lsp')` and
-- when `vim.lsp.enable('kernel_lsp')` resolves lsp/kernel_lsp.lua, so a
-- runtimepath added later (`nvim -u NONE`, `:set rtp+=...`) gets them too.

require('kernel_lsp.commands').define()
