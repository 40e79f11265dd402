<?php
use PHPUnit\Framework\TestCase;

final class CountTest extends TestCase {
	public function test_simple_words(): void {
		$this->assertSame( 3, buggy_counter_count( 'one two three' ) );
	}

	public function test_repeated_spaces(): void {
		$this->assertSame( 2, buggy_counter_count( 'a  b' ) );
	}
}
