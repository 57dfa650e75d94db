# regex.pl — bench/unwind's Perl workload: match, count and substitute over a 1.5 MB text,
# ROUNDS (ARGV[0]) times. Prints a count.
use strict;
use warnings;

my $rounds = $ARGV[0] // 3;
my $text = join(" ", map { "word$_ key=value$_ 10." . ($_ % 256) . "." . (($_ * 7) % 256)
                           . ".1 user$_\@example" . ($_ % 97) . ".com" } 1 .. 30000);
my $n = 0;
for my $r (1 .. $rounds) {
    while ($text =~ /(\d+)\.(\d+)\.(\d+)\.(\d+)/g) { $n += $2; }
    $n += () = $text =~ /\b\w+\@\w+\.com\b/g;
    (my $copy = $text) =~ s/key=(\w+)/value=\U$1/g;
    $n += length($copy);
    my @words = grep { /^w.*[13579]$/ } split /\s+/, $text;
    $n += @words;
}
print "$n\n";
